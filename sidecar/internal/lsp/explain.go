package lsp

import (
	"context"
	"runtime"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/failures"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// explain serves kmx/explain (and kmx.explainLastFailure): the retained
// failures of a file, read offline by failures.Explain with zero model,
// provider, credential or journal access. Records are compared with the
// text the editor holds (the buffer when open), so an edit since the last
// test shows them as history.
func (s *Server) explain(_ context.Context, p ExplainParams) (*ExplainResult, error) {
	path := uriPath(p.URI)
	if path == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %q is not a file URI; Explain reads failures retained for a file on disk", MethodExplain, p.URI)
	}
	var current []byte
	if src, err := s.source(MethodExplain, p.URI); err == nil {
		current = src.text
	}
	root, err := state.Dir(s.opts.Getenv, runtime.GOOS)
	if err != nil {
		return nil, requestFailed(MethodExplain, problem.Wrap(err, problem.SetKMXHome))
	}
	exp, err := failures.Explain(root, path, current, p.ShowContent)
	if err != nil {
		// An unsafe store (*state.UnsafeError) says itself what to fix.
		return nil, requestFailed(MethodExplain, err)
	}
	return &ExplainResult{ProtocolVersion: ProtocolVersion, URI: p.URI, Label: failures.Label, Explanation: exp}, nil
}
