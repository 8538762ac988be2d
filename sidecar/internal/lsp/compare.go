package lsp

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/compare"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// compareModels serves kmx/compare (kmx.compareModels): the file tested on
// every model asked for and, with a baseline, on the instructions at that
// revision, through runner.Compare and runner.ReadBaseline as the CLI and
// MCP do. The grid, the changes and the rows where the models disagree are
// the sidecar's; the editor only renders them. A comparison that cannot be
// made is a result with a refusal, as a refused test is a report.
func (s *Server) compareModels(ctx context.Context, p CompareModelsParams) (*CompareModelsResult, error) {
	if p.URI == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: uri is required", MethodCompareModels)
	}
	src, err := s.source(MethodCompareModels, p.URI)
	if err != nil {
		return nil, err
	}
	res := &CompareModelsResult{ProtocolVersion: ProtocolVersion, URI: p.URI, DocumentVersion: src.version}
	refuse := func(msg, next string) (*CompareModelsResult, error) {
		res.Refusal = &compare.Refusal{Message: msg, Next: next}
		return res, nil
	}
	if len(p.Models) < 2 && p.Baseline == "" {
		return refuse(fmt.Sprintf("a comparison needs two or more models, or a baseline; %d model(s) given", len(p.Models)),
			"pick at least two models, or test the file on one")
	}
	c := runner.Comparison{Models: p.Models}
	if p.Baseline != "" {
		b, err := runner.ReadBaseline(ctx, src.path, src.text, p.Baseline, s.readText)
		if err != nil {
			return refuse(compareRefusal(err))
		}
		c.Baseline = b
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	id, name := s.work.start(cancel)
	release(ctx)
	columns := max(len(p.Models), 1)
	if c.Baseline != nil {
		columns *= 2
	}
	examples := len(p.Examples)
	if examples == 0 {
		if parsed := s.parse(src.path, src.text); parsed.Agent != nil {
			examples = len(parsed.Agent.Examples)
		}
	}
	title := fmt.Sprintf("kmx: compare %d models (local preview)", len(p.Models))
	if len(p.Models) < 2 {
		title = "kmx: compare with baseline " + p.Baseline + " (local preview)"
	}
	prog := s.beginProgress(ctx, p.WorkDoneToken, name, title, cancel)
	defer s.work.finish(id, prog.token)
	defer s.refreshCodeLenses(ctx)

	// Every column's examples count toward one progress; the columns
	// finish examples concurrently.
	var mu sync.Mutex
	done, total := 0, examples*columns
	opts := s.previewOptions("")
	opts.Trials = p.Trials
	opts.OnFinished = func(ex runner.ExampleResult) {
		mu.Lock()
		defer mu.Unlock()
		done++
		pct := 100
		if total > 0 {
			pct = min(100, done*100/total)
		}
		prog.report(fmt.Sprintf("%d of %d: %s %s", done, total, ex.ID, ex.Verdict), pct)
	}
	grid, reps, err := runner.Compare(ctx, opts, invocation.Request{Path: src.path, Source: src.text, Read: s.readText, Examples: p.Examples}, c)
	switch {
	case ctx.Err() != nil:
		prog.end(OutcomeCancelled, "stopped; examples after the ones in flight were not sent")
	case err != nil:
		if r, ok := invocation.AsRefusal(err); ok {
			prog.end(OutcomeFailed, "refused: "+r.Msg)
			return refuse(r.Msg, r.Next)
		}
		prog.end(OutcomeFailed, err.Error())
		s.log.Error("comparison failed", "method", MethodCompareModels, "err", err)
		return nil, requestFailed(MethodCompareModels, err)
	default:
		sum := grid.Summary
		prog.end(OutcomeCompleted, fmt.Sprintf("%s — %d pass, %d fail, %d unknown over %d columns (local preview)", grid.Verdict, sum.Pass, sum.Fail, sum.Unknown, len(grid.Columns)))
	}
	if grid == nil {
		// Cancelled before the grid was laid out.
		return refuse("the comparison was stopped before every column finished", "compare again")
	}
	res.Comparison, res.Reports = grid, reps
	return res, nil
}

// compareRefusal is a baseline's refusal (a revision git does not know, a
// file absent at it, no git work tree) in the editor's words: the message
// and what to change.
func compareRefusal(err error) (msg, next string) {
	var re *compare.RevisionError
	if errors.As(err, &re) {
		return re.Msg, re.Next
	}
	if r, ok := invocation.AsRefusal(err); ok {
		return r.Msg, r.Next
	}
	return err.Error(), "choose a revision git knows, or the baseline none"
}
