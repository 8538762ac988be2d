package lsp

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// listRuns serves kmx/listRuns (and kmx.listRuns): the runs whose journal
// records this file's agent ID, from journal.List.
func (s *Server) listRuns(_ context.Context, p DocumentParams) (*ListRunsResult, error) {
	src, err := s.source(MethodListRuns, p.URI)
	if err != nil {
		return nil, err
	}
	res := s.parse(src.path, src.text)
	if res.Agent == nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %s has no agent to list runs for", MethodListRuns, p.URI)
	}
	out := &ListRunsResult{ProtocolVersion: ProtocolVersion, URI: p.URI, AgentID: res.Agent.ID, CurrentRevision: res.Agent.Revision, Runs: []journal.RunInfo{}}
	dir, err := s.journalDir(MethodListRuns)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	runs, err := journal.ListAgent(dir, res.Agent.ID, agentPathKey(p.URI))
	if err != nil {
		return nil, requestFailed(MethodListRuns, err)
	}
	out.Runs = append(out.Runs, runs...)
	return out, nil
}
