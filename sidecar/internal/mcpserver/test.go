package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	}, func(ctx context.Context, r *mcp.CallToolRequest, in TestArgs) (*mcp.CallToolResult, *runner.Report, error) {
		c := cfg
		if r := checkTrials(in); r != nil {
			return errorResult(r), nil, nil
		}
		if in.Trials != nil {
			c.trials = *in.Trials
		}
		c.fromRun = in.FromRun
		return invoke(ctx, c, r.Session, "test", in.File, invocation.Request{Examples: in.Examples}, in.Model)
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
			msg:  fmt.Sprintf("kmx test: the trials argument is %d; it must be from 1 to %d", *in.Trials, runner.MaxTrials),
			next: fmt.Sprintf("pass trials from 1 to %d, or omit trials to run each example once", runner.MaxTrials),
		}
	case *in.Trials > 1 && in.FromRun != "":
		return &refusal{
			msg:  "kmx test: trials and fromRun cannot be combined: a re-grade grades each journaled answer once, and grading the same answers N times is no trial of the model",
			next: "omit trials to re-grade the run's answers, or omit fromRun to run fresh trials",
		}
	}
	return nil
}
