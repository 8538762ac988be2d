package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/compare"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// ReadBaseline is --baseline REV or none for the agent file at path (or
// its examples file) whose text is src: the instructions the baseline
// columns send instead of the file's, and where they came from. read
// returns the other file of a pair (nil reads the disk). Git is read with
// plumbing only (compare.ReadAtRevision); every refusal (a
// *compare.RevisionError) comes before anything is created or sent. It is
// here, not in compare, because it builds the invocation's baseline.
func ReadBaseline(ctx context.Context, path string, src []byte, rev string, read func(string) ([]byte, error)) (*invocation.Baseline, error) {
	if read == nil {
		read = invocation.ReadPairFile
	}
	agentPath, examplesPath, examplesSrc, err := baselinePair(path, src, read)
	if err != nil {
		return nil, err
	}
	if rev == compare.BaselineNone {
		sum := sha256.Sum256(append([]byte("kmx baseline none\x00"), src...))
		return &invocation.Baseline{Rev: compare.BaselineNone, Revision: hex.EncodeToString(sum[:])}, nil
	}
	at, err := compare.ReadAtRevision(ctx, agentPath, rev)
	if err != nil {
		return nil, err
	}
	instructions, err := compare.InstructionsAt(agentPath, at.Source, examplesPath, examplesSrc, rev)
	if err != nil {
		return nil, err
	}
	revision := agentfile.PairRevision(at.Source, examplesSrc)
	if examplesPath == "" {
		sum := sha256.Sum256(at.Source)
		revision = hex.EncodeToString(sum[:])
	}
	return &invocation.Baseline{Rev: rev, Commit: at.Baseline.Commit, Path: at.Baseline.Path, Instructions: instructions, Revision: revision}, nil
}

// baselinePair names the agent file of path and, when its examples live beside
// it, the examples file and its text (the current examples: a baseline
// changes only the instructions).
func baselinePair(path string, src []byte, read func(string) ([]byte, error)) (agentPath, examplesPath string, examplesSrc []byte, err error) {
	if a := agentfile.AgentPathOf(path); a != "" {
		return a, path, src, nil
	}
	sibling := agentfile.SiblingExamplesPath(path)
	if sibling == "" {
		return path, "", nil, nil
	}
	b, err := read(sibling)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return path, "", nil, nil
	case err != nil:
		return "", "", nil, compare.RefuseBaseline("", problem.Plain("check the examples file beside the agent file"), ": cannot read %s: %v", sibling, problem.PathReason(err))
	}
	return path, sibling, b, nil
}
