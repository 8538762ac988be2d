package lsp

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
)

// inspect serves kmx/inspect (and kmx.inspectRun): the versioned replay of
// one retained run, with zero model calls (readback.Inspect). Judge
// reasoning is withheld unless asked for.
func (s *Server) inspect(ctx context.Context, p InspectParams) (*InspectResult, error) {
	if !journal.ValidRunID(p.RunID) {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %q is not a run ID; take one from %s", MethodInspect, p.RunID, MethodListRuns)
	}
	dir, err := s.journalDir(MethodInspect)
	if err != nil {
		return nil, err
	}
	in, err := readback.Inspect(ctx, dir, p.RunID)
	if err != nil {
		if r, ok := invocation.AsRefusal(err); ok {
			msg := r.Msg
			if r.Next != "" {
				msg += "; " + r.Next
			}
			return nil, jsonrpc2.Errorf(CodeRequestFailed, "%s: %s", MethodInspect, msg)
		}
		return nil, requestFailed(MethodInspect, err)
	}
	if !p.ShowReasoning {
		in.HideReasoning()
	}
	return &InspectResult{ProtocolVersion: ProtocolVersion, Inspection: in}, nil
}

// lastRun returns the newest run of the agent (its ID and file) that is no longer executing, for
// the "Replay last run" lens; "" when there is none (or no journals yet).
func (s *Server) lastRun(agentID, agentPath string) string {
	return s.newestRun(func(r journal.RunInfo) bool { return endedRun(r.Status) && r.Of(agentID, agentPath) })
}

// lastTestRun returns the newest finished kmx test run of agentID, the one
// "Re-grade last run" re-grades; "" when there is none. Only a test that
// finished recorded its verdicts (the run.result record a re-grade needs);
// the re-grade itself replays the whole journal before trusting it.
func (s *Server) lastTestRun(agentID, agentPath string) string {
	return s.newestRun(func(r journal.RunInfo) bool {
		return r.Status == journal.StatusFinished && r.Command == "test" && r.Of(agentID, agentPath)
	})
}

// agentPathKey is the journal's path of the agent file a document URI is
// part of (an examples file's agent file), "" for a URI that names no
// file on disk.
func agentPathKey(uri string) string {
	p := uriPath(uri)
	if a := agentfile.AgentPathOf(p); a != "" {
		p = a
	}
	return journal.PathKey(p)
}

// newestRun returns the ID of the newest retained run that keep accepts;
// "" when there is none, or no journal folder yet.
func (s *Server) newestRun(keep func(journal.RunInfo) bool) string {
	dir, err := s.journalDir(MethodListRuns)
	if err != nil {
		return ""
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	runs, err := journal.List(dir)
	if err != nil {
		return ""
	}
	last := ""
	for _, r := range runs {
		if keep(r) && r.ID > last {
			last = r.ID
		}
	}
	return last
}
