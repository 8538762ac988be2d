package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// RunArgs are the Run tool's arguments. There is deliberately no endpoint
// or credential argument: those are fixed when kmx mcp starts.
type RunArgs struct {
	File     string   `json:"file" jsonschema:"path of the *.agent.md file or its NAME.agent.examples.yaml; absolute, since a relative path is read from the server's working directory"`
	Examples []string `json:"examples,omitempty" jsonschema:"example IDs to run; omit to run every example"`
	Input    *string  `json:"input,omitempty" jsonschema:"ad-hoc input to send instead of the examples (at most 16 KiB)"`
	Model    string   `json:"model,omitempty" jsonschema:"model override; fake is the deterministic offline model; omit to use the file's model"`
}

func addRun(srv *mcp.Server, cfg Config) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "Run",
		Title: "Run an agent file (local preview)",
		Description: "Run an agent file's examples, or one ad-hoc input, and return each answer with its assertion results. " +
			"Each turn is journaled and verified by replay. The result is a local preview, not deployment qualification.",
		InputSchema: inputSchema[RunArgs](),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, OpenWorldHint: ptr(true)},
	}, func(ctx context.Context, r *mcp.CallToolRequest, in RunArgs) (*mcp.CallToolResult, *runner.Report, error) {
		return invoke(ctx, cfg, r.Session, call{command: "run", file: in.File, req: invocation.Request{Examples: in.Examples, Input: in.Input}, model: in.Model, progress: r.Params.GetProgressToken()})
	})
}

func ptr[T any](v T) *T { return &v }
