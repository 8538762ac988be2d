package lsp

import (
	"context"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// run serves kmx/run (kmx.runExample, kmx.runWithInput): one example, or
// ad-hoc input, through runner.Run, answers shown.
func (s *Server) run(ctx context.Context, p ExampleParams) (*ReportResult, error) {
	if p.URI == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: uri is required", MethodRun)
	}
	req := invocation.Request{}
	title := "kmx: run "
	switch {
	case p.Input != nil && p.ExampleID != "":
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: give exampleId or input, not both", MethodRun)
	case p.Input != nil:
		req.Input = p.Input
		title += "with input"
	case p.ExampleID != "":
		req.Examples = []string{p.ExampleID}
		title += "example " + p.ExampleID
	default:
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: give exampleId (an example of the file) or input (ad-hoc text)", MethodRun)
	}
	src, err := s.source(MethodRun, p.URI)
	if err != nil {
		return nil, err
	}
	return s.execute(ctx, MethodRun, title+" (local preview)", p.URI, p.WorkDoneToken, src, 1, s.previewOptions(p.Model), req, runner.Run)
}
