package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/compare"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// TestArgs are the Test tool's arguments. Test has no ad-hoc input: it
// judges the file's examples.
type TestArgs struct {
	File     string   `json:"file" jsonschema:"path of the *.agent.md file or its NAME.agent.examples.yaml; absolute, since a relative path is read from the server's working directory"`
	Examples []string `json:"examples,omitempty" jsonschema:"example IDs to test; omit to test every example"`
	Model    string   `json:"model,omitempty" jsonschema:"model override; fake is the deterministic offline model; omit to use the file's model"`
	Trials   *int     `json:"trials,omitempty" jsonschema:"run each example this many times (1 to 20), each in a fresh Session; an example with mixed outcomes is flaky; omit for 1"`
	FromRun  string   `json:"fromRun,omitempty" jsonschema:"re-grade: a run ID whose journaled answers are graded against the current assertions with zero agent model calls; examples whose instructions, input or model changed are refused"`
	Models   []string `json:"models,omitempty" jsonschema:"compare: test on each of these models, each its own run and journal, on one shared concurrency pool; the result's comparison is the grid (instead of model)"`
	Baseline string   `json:"baseline,omitempty" jsonschema:"compare: also run the examples on the agent's instructions at this git revision (read with git, never checked out), or none for empty instructions; each example is then improved, regressed or unchanged"`
}

// TestResult is the Test tool's structured result: the safe report and,
// for a comparison (models or baseline), the grid. In a comparison the
// report is the first model's, its verdict replaced by the comparison's
// (never better than the worst cell).
type TestResult struct {
	*runner.Report
	Comparison *compare.Result `json:"comparison,omitempty"`
}

// testResult wraps a report; nil stands for the empty report the tool
// returned before it had a comparison.
func testResult(rep *runner.Report) *TestResult {
	if rep == nil {
		rep = &runner.Report{}
	}
	return &TestResult{Report: rep}
}

func addTest(srv *mcp.Server, cfg Config) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "Test",
		Title: "Test an agent file (local preview)",
		Description: "Test an agent file's examples and report a verdict per example (pass, fail or unknown) and for the file. " +
			"Answers are not included. A verdict is pass only when every selected example passed. " +
			"The result is a local preview, not deployment qualification.",
		InputSchema: inputSchema[TestArgs](),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, OpenWorldHint: ptr(true)},
	}, func(ctx context.Context, r *mcp.CallToolRequest, in TestArgs) (*mcp.CallToolResult, *TestResult, error) {
		if r := checkTrials(in); r != nil {
			return errorResult(r), testResult(nil), nil
		}
		if len(in.Models) > 0 || in.Baseline != "" {
			return compareTool(ctx, cfg, r.Session, r.Params.GetProgressToken(), in)
		}
		c := call{command: "test", file: in.File, req: invocation.Request{Examples: in.Examples}, model: in.Model, fromRun: in.FromRun, progress: r.Params.GetProgressToken()}
		if in.Trials != nil {
			c.trials = *in.Trials
		}
		res, rep, err := invoke(ctx, cfg, r.Session, c)
		return res, testResult(rep), err
	})
}

// checkTrials refuses the trials argument as the client gave it, naming
// the arguments (trials, fromRun), not the CLI's flags: trials 0 was taken
// as omitted and ran once, where kmx test --trials 0 is refused.
func checkTrials(in TestArgs) *refusal {
	switch {
	case in.Trials == nil:
		return nil
	case *in.Trials < 1 || *in.Trials > runner.MaxTrials:
		return &refusal{
			msg:  fmt.Sprintf("Test: the trials argument is %d; it must be from 1 to %d", *in.Trials, runner.MaxTrials),
			next: fmt.Sprintf("pass trials from 1 to %d, or omit trials to run each example once", runner.MaxTrials),
		}
	case *in.Trials > 1 && in.FromRun != "":
		return &refusal{
			msg:  "Test: trials and fromRun cannot be combined: a re-grade grades each journaled answer once, and grading the same answers N times is no trial of the model",
			next: "omit trials to re-grade the run's answers, or omit fromRun to run fresh trials",
		}
	}
	return nil
}

// compareTool is Test with models or a baseline: runner.Compare on the
// confined file, the grid as text and as the result's comparison.
func compareTool(ctx context.Context, cfg Config, ss *mcp.ServerSession, token any, in TestArgs) (*mcp.CallToolResult, *TestResult, error) {
	switch {
	case in.Model != "" && len(in.Models) > 0:
		return errorResult(&refusal{msg: "Test takes model or models, not both", next: "put every model to compare in models"}), testResult(nil), nil
	case in.FromRun != "":
		return errorResult(&refusal{msg: "fromRun re-grades one run's answers; it cannot be combined with models or baseline", next: "drop fromRun to compare fresh runs, or drop models and baseline to re-grade"}), testResult(nil), nil
	}
	pf, r := cfg.confinePair(ctx, ss, "Test", in.File)
	if r != nil {
		return errorResult(r), testResult(nil), nil
	}
	src, err := readAgentFile("Test", pf.agent, pf.real)
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return errorResult(r), testResult(nil), nil
		}
		return nil, nil, err
	}
	c := runner.Comparison{Models: in.Models}
	if in.Model != "" {
		c.Models = []string{in.Model}
	}
	if in.Baseline != "" {
		b, err := runner.ReadBaseline(ctx, pf.real, src, in.Baseline, pf.read)
		if err != nil {
			return errorResult(problemRefusal(err, "choose a revision git knows, or baseline none")), testResult(nil), nil
		}
		c.Baseline = b
	}
	opts := cfg.options("")
	if in.Trials != nil {
		opts.Trials = *in.Trials
	}
	newProgress(ctx, ss, token, cfg.Logger).observe(&opts)
	res, reps, err := runner.Compare(ctx, opts, invocation.Request{Path: pf.agent, Source: src, Read: pf.read, Examples: in.Examples}, c)
	if _, ok := invocation.AsRefusal(err); ok {
		return errorResult(engineRefusal(nil, err)), testResult(nil), nil
	}
	if err != nil {
		return errorResult(&refusal{msg: err.Error(), next: "this is not a verdict; nothing was reported as passing"}), testResult(nil), nil
	}
	first := *reps[0]
	first.Verdict = res.Verdict
	var text strings.Builder
	if err := compare.WriteTableIn(&text, res, words); err != nil {
		return nil, nil, err
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}}
	return out, &TestResult{Report: &first, Comparison: res}, nil
}
