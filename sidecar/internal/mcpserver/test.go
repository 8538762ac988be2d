package mcpserver

import (
	"context"

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
	Trials   int      `json:"trials,omitempty" jsonschema:"run each example this many times (1 to 20), each in a fresh Session; an example with mixed outcomes is flaky; omit for 1"`
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
		c.trials, c.fromRun = in.Trials, in.FromRun
		return invoke(ctx, c, r.Session, "test", in.File, invocation.Request{Examples: in.Examples}, in.Model)
	})
}
