package mcpserver

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/failures"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// ExplainArgs are the Explain tool's arguments.
type ExplainArgs struct {
	File        string `json:"file" jsonschema:"path of the *.agent.md file (or its NAME.agent.examples.yaml) whose retained Test failures to show; it may since have been deleted"`
	ShowContent bool   `json:"showContent,omitempty" jsonschema:"include answer excerpts; they are withheld unless asked for"`
}

func addExplain(srv *mcp.Server, cfg Config) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "Explain",
		Title: "Explain retained Test failures (offline)",
		Description: "Show the retained failure records of an agent file's earlier Test runs, newest first, each marked current or history. " +
			"Offline: no model, endpoint or credential is used, and nothing is written. " +
			"Retained diagnostics, not a test result.",
		InputSchema: inputSchema[ExplainArgs](),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, func(ctx context.Context, r *mcp.CallToolRequest, in ExplainArgs) (*mcp.CallToolResult, *failures.Explanation, error) {
		// Failures are kept per agent file: an examples file names the
		// agent file beside it, confined to the roots like any file.
		pf, refused := cfg.confinePair(ctx, r.Session, "Explain", in.File)
		if refused != nil {
			return errorResult(refused), nil, nil
		}
		in.File = pf.agent
		return explain(cfg, in, pf.real)
	})
}

// explain is the command line's kmx test explain --json, as a tool.
// The file was confined to the roots and resolved to real.
func explain(cfg Config, in ExplainArgs, real string) (*mcp.CallToolResult, *failures.Explanation, error) {
	root, err := state.Dir(cfg.Getenv, runtime.GOOS)
	if err != nil {
		return errorResult(&refusal{msg: "Explain: " + err.Error(), next: "restart this server with its environment fixed: " + problem.SetKMXHome}), nil, nil
	}
	exp, gone, err := failures.ExplainFile(root, in.File, real, in.ShowContent)
	if err != nil {
		return errorResult(&refusal{msg: "Explain: " + err.Error(), next: problem.NextStepIn(err, words)}), nil, nil
	}
	if len(exp.Records) == 0 && len(exp.Corrupt) > 0 {
		r := &refusal{
			msg:  fmt.Sprintf("Explain: %d record(s) retained for %s, and none can be read", len(exp.Corrupt), in.File),
			next: fmt.Sprintf("remove the record files this result's corrupt list names from %s (kmx's own files; nothing else reads them), then call Test again", failures.RecordsDir(root, exp.Subject)),
		}
		return errorResult(r), &exp, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: explainSummary(exp, gone)}}}, &exp, nil
}

// explainSummary is the short text beside the structured explanation.
func explainSummary(exp failures.Explanation, gone bool) string {
	var b strings.Builder
	if len(exp.Records) == 0 {
		if gone {
			fmt.Fprintf(&b, "%s does not exist (yet). ", exp.File)
		}
		fmt.Fprintf(&b, "%s: nothing is retained for %s: kmx keeps a record only when Test completes with a fail or unknown verdict (the last %d per file)\nnext: call Test on %s",
			exp.Label, exp.File, failures.MaxRecordsPerSubject, exp.File)
		return b.String()
	}
	rev := "the file no longer exists"
	if exp.CurrentRevision != "" {
		rev = "current revision " + failures.ShortRevision(exp.CurrentRevision)
	}
	fmt.Fprintf(&b, "%s: %d retained Test failure record(s) for %s, newest first; %s", exp.Label, len(exp.Records), exp.File, rev)
	withheld := false
	for i, r := range exp.Records {
		fmt.Fprintf(&b, "\n[%d] verdict %s, %s: %s", i+1, r.Verdict, r.Relation, r.Note)
		for _, ex := range r.Examples {
			fmt.Fprintf(&b, "\n  %s %s", ex.Verdict, ex.ID)
			if d := ex.Deciding; d != nil {
				msg := d.Message
				if msg == "" {
					msg = d.Outcome
				}
				fmt.Fprintf(&b, ": assertion %d (%s): %s", d.Index+1, d.Type, msg)
			} else if ex.Message != "" {
				fmt.Fprintf(&b, ": %s", ex.Message)
			}
			withheld = withheld || ex.ContentWithheld
		}
	}
	if len(exp.Corrupt) > 0 {
		fmt.Fprintf(&b, "\n%d further record(s) cannot be read", len(exp.Corrupt))
	}
	if withheld {
		b.WriteString("\nanswer excerpts withheld; call Explain with showContent true to see them")
	}
	fmt.Fprintf(&b, "\n%s: retained diagnostics, not a test result; call Test to test the current text", exp.Label)
	return b.String()
}
