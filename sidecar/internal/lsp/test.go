package lsp

import (
	"context"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// test serves kmx/test (kmx.testFile, kmx.regradeLastRun): the selected
// examples, or all, through runner.Test; with fromRun, a re-grade.
func (s *Server) test(ctx context.Context, p TestParams) (*ReportResult, error) {
	if p.URI == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: uri is required", MethodTest)
	}
	src, err := s.source(MethodTest, p.URI)
	if err != nil {
		return nil, err
	}
	title := "kmx: test file (local preview)"
	total := len(p.Examples)
	if total == 0 {
		if res := s.parse(src.path, src.text); res.Agent != nil {
			total = len(res.Agent.Examples)
		}
	} else {
		title = "kmx: test selected examples (local preview)"
	}
	if p.FromRun != "" {
		title = "kmx: re-grade run " + p.FromRun + " (local preview, zero agent model calls)"
	}
	opts := s.previewOptions(p.Model)
	opts.Trials, opts.FromRun = p.Trials, p.FromRun
	return s.execute(ctx, MethodTest, title, p.URI, p.WorkDoneToken, src, total, opts, invocation.Request{Examples: p.Examples}, runner.Test)
}
