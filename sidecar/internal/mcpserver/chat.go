package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/conversation"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// ChatArgs are the Chat tool's arguments: kmx chat's, without endpoint or
// credential (fixed when kmx mcp starts).
type ChatArgs struct {
	File         string  `json:"file" jsonschema:"path of the *.agent.md file; absolute, since a relative path is read from the server's working directory"`
	Input        *string `json:"input,omitempty" jsonschema:"the message to send (at most 16 KiB); omit to read the history, replayed with zero model calls"`
	Conversation string  `json:"conversation,omitempty" jsonschema:"conversation ID; omit for the file's default conversation"`
	Model        string  `json:"model,omitempty" jsonschema:"model override; must be the conversation's model once it has turns; omit to use the file's model"`
}

func addChat(srv *mcp.Server, cfg Config) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "Chat",
		Title: "Talk to an agent file (local preview)",
		Description: "Send one message to the agent in a file, in its durable conversation: every earlier answered turn is sent as history, " +
			"replayed from the conversation's journal with zero model calls; nothing is ever re-sent. Omit input to read the history. " +
			"A turn is a local preview, not a test result.",
		InputSchema: inputSchema[ChatArgs](),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, OpenWorldHint: ptr(true)},
	}, func(ctx context.Context, r *mcp.CallToolRequest, in ChatArgs) (*mcp.CallToolResult, *conversation.Transcript, error) {
		real, refused := cfg.confine(ctx, r.Session, "Chat", in.File)
		if refused != nil {
			return errorResult(refused), nil, nil
		}
		if _, err := readAgentFile("Chat", in.File, real); err != nil {
			var rf *refusal
			if errors.As(err, &rf) {
				return errorResult(rf), nil, nil
			}
			return nil, nil, err
		}
		req := conversation.Request{File: in.File, ID: in.Conversation, Route: cfg.options(in.Model).Options}
		var res *conversation.Transcript
		var err error
		if in.Input == nil {
			res, err = conversation.History(ctx, req)
		} else {
			res, err = conversation.Say(ctx, req, *in.Input)
		}
		if err != nil {
			return errorResult(problemRefusal(err, problem.StepFor(err, "nothing was added to the conversation"))), res, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: chatSummary(res, in.Input == nil)}}}, res, nil
	})
}

// chatSummary is the text beside the structured result: the turn just sent
// (or the whole history), labelled local preview.
func chatSummary(res *conversation.Transcript, whole bool) string {
	var b strings.Builder
	model := "no model yet"
	if res.Model != nil {
		model = fmt.Sprintf("model %s via %s", res.Model.Model, res.Model.Route)
	}
	fmt.Fprintf(&b, "%s: conversation %s of %s, %s, history replayed with %d model calls", res.Label, res.Conversation, res.File, model, res.ReplayLiveCalls)
	turns := res.Turns
	if !whole && res.Turn != nil {
		turns = []conversation.ChatTurn{*res.Turn}
	}
	for _, t := range turns {
		fmt.Fprintf(&b, "\nturn %d (%s)\n  you: %s", t.N, t.State, strings.ReplaceAll(t.Input, "\n", "\n  "))
		if t.State == conversation.StateAnswered {
			fmt.Fprintf(&b, "\n  agent: %s", strings.ReplaceAll(strings.TrimRight(t.Answer, "\n"), "\n", "\n  "))
		} else if t.Error != "" {
			fmt.Fprintf(&b, "\n  (%s)", t.Error)
		}
	}
	if res.Unfinished > 0 {
		fmt.Fprintf(&b, "\nturn %d has no recorded outcome: discard it (Discard in kmx's chat panel in VS Code) to continue, or use another conversation", res.Unfinished)
	}
	if res.Pending > 0 {
		fmt.Fprintf(&b, "\nturn %d is running now (in another window or process): its answer is not in the history yet", res.Pending)
	}
	return b.String()
}
