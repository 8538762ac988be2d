package lsp

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
)

// diffRuns serves kmx/diffRuns (and kmx.compareRuns): kmx journal diff of a
// run and the previous run of its file, through readback.Diff, offline
// with zero model calls. The server picks the runs; the editor only renders.
func (s *Server) diffRuns(ctx context.Context, p DiffRunsParams) (*DiffRunsResult, error) {
	if p.RunID != "" && !journal.ValidRunID(p.RunID) {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %q is not a run ID; take one from %s", MethodDiffRuns, p.RunID, MethodListRuns)
	}
	if p.Comparison && p.RunID == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: comparison needs runId, a run of the comparison (a column's run in the Compare Models grid)", MethodDiffRuns)
	}
	dir, err := s.journalDir(MethodDiffRuns)
	if err != nil {
		return nil, err
	}
	if p.Comparison {
		cd, err := readback.DiffComparison(ctx, dir, p.RunID)
		if err != nil {
			return nil, diffRefusal(err)
		}
		return &DiffRunsResult{ProtocolVersion: ProtocolVersion, Comparison: cd}, nil
	}
	var runs []journal.RunInfo
	if _, err := os.Lstat(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, jsonrpc2.Errorf(CodeRequestFailed, "%s: %v", MethodDiffRuns, err)
	} else if err == nil {
		if runs, err = journal.List(dir); err != nil {
			return nil, jsonrpc2.Errorf(CodeRequestFailed, "%s: %v", MethodDiffRuns, err)
		}
	}
	var agentID, agentPath, subject string
	switch {
	case p.RunID != "":
		status := ""
		for _, r := range runs {
			if r.ID == p.RunID {
				agentID, agentPath, status = r.AgentID, r.AgentPath, r.Status
			}
		}
		if agentID == "" {
			return nil, jsonrpc2.Errorf(CodeRequestFailed, "%s: run %s is not retained (kmx keeps the newest 20 runs); pick a run from %s", MethodDiffRuns, p.RunID, MethodListRuns)
		}
		if !endedRun(status) {
			return nil, jsonrpc2.Errorf(CodeRequestFailed, "%s: run %s is %s, not ended; compare it once it has finished", MethodDiffRuns, p.RunID, status)
		}
		subject = "run " + p.RunID
	case p.URI != "":
		src, err := s.source(MethodDiffRuns, p.URI)
		if err != nil {
			return nil, err
		}
		res := s.parse(src.path, src.text)
		if res.Agent == nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %s has no agent to compare runs of; fix the file (see the Problems panel)", MethodDiffRuns, p.URI)
		}
		agentID, agentPath, subject = res.Agent.ID, agentPathKey(p.URI), "the newest run"
	default:
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: give uri (an agent file) or runId (a retained run)", MethodDiffRuns)
	}
	a, b := previousRun(runs, agentID, agentPath, p.RunID)
	if a == "" {
		return nil, jsonrpc2.Errorf(CodeRequestFailed, "%s: %s of agent %q has no earlier finished run to compare with; run or test the file again, then compare", MethodDiffRuns, subject, agentID)
	}
	d, err := readback.Diff(ctx, dir, a, b)
	if err != nil {
		return nil, diffRefusal(err)
	}
	return &DiffRunsResult{ProtocolVersion: ProtocolVersion, Diff: d}, nil
}

// diffRefusal is a read-back error as kmx/diffRuns answers it: a refusal's
// text and next step, or the error.
func diffRefusal(err error) error {
	if r, ok := invocation.AsRefusal(err); ok {
		msg := r.Msg
		if r.Next != "" {
			msg += "; " + r.Next
		}
		return jsonrpc2.Errorf(CodeRequestFailed, "%s: %s", MethodDiffRuns, msg)
	}
	return jsonrpc2.Errorf(CodeRequestFailed, "%s: %v", MethodDiffRuns, err)
}

// previousRun returns (A, B): B is run (or, when run is "", the newest
// ended run of the agent agentID in agentPath) and A the newest ended run
// of that agent before it; A is "" when there is none. Executing runs are
// never compared.
func previousRun(runs []journal.RunInfo, agentID, agentPath, run string) (string, string) {
	var ended []string
	for _, r := range runs {
		if r.Of(agentID, agentPath) && endedRun(r.Status) {
			ended = append(ended, r.ID)
		}
	}
	// Run IDs begin with their UTC creation time, so they sort by age.
	slices.Sort(ended)
	b := run
	if b == "" {
		if len(ended) == 0 {
			return "", ""
		}
		b = ended[len(ended)-1]
	}
	a := ""
	for _, id := range ended {
		if id < b {
			a = id
		}
	}
	return a, b
}

// endedRun says whether a run with this status is no longer executing and
// was recorded as ended.
func endedRun(status string) bool {
	switch status {
	case journal.StatusFinished, journal.StatusCancelled, journal.StatusFailed:
		return true
	}
	return false
}
