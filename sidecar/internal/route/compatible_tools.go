package route

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// Tool calling on the compatible route (the kmx-local-tools-v1 harness):
// send 1 offers the harness's tools as Chat Completions "tools"
// ({"type": "function", "function": {name, description, parameters}}); its
// reply may request one batch of calls in the first choice's
// message.tool_calls. Send 2 carries that assistant message with its
// tool_calls and one "tool" message per call; its reply must be text. The
// wire body is a pure function of the Request (CompatibleBody), so the
// request of both sends is rebuilt exactly from the journaled turn and
// replay needs no endpoint.

// MaxToolCalls is the largest batch of tool calls a reply may request
// (the kmx-local-tools-v1 bound; localtools.MaxCalls is the same number).
const MaxToolCalls = 5

// maxFunctionNameBytes is the longest function name an OpenAI-compatible
// endpoint accepts (^[A-Za-z0-9_-]{1,64}$).
const maxFunctionNameBytes = 64

// CheckFunctionName refuses a tool name an OpenAI-compatible endpoint does
// not accept as a function name: 1 to 64 ASCII letters, digits, '_' or '-'.
// The error is a *ConfigError naming the tool.
func CheckFunctionName(name string) error {
	ok := len(name) >= 1 && len(name) <= maxFunctionNameBytes
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c == '_' || c == '-' || isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
	}
	if ok {
		return nil
	}
	shown := name
	if len(shown) > maxFunctionNameBytes || !utf8.ValidString(shown) {
		shown = strings.ToValidUTF8(shown[:min(len(shown), maxFunctionNameBytes)], "") + "..."
	}
	return configErrIn("tools", fmt.Sprintf("the tool name %q cannot be offered on an OpenAI-compatible endpoint, which accepts function names of 1 to 64 letters, digits, '_' or '-'", shown),
		func(w problem.Words) string {
			return "rename the tool in the agent file, set it Disabled in kmx.yaml, or run on the fake model (" + w(problem.Model, "fake") + ") or a model VS Code offers"
		})
}

// wireToolRequest is the Chat Completions body of a request on the tool
// path. (The tool-free body is wireRequest, byte for byte as before.)
type wireToolRequest struct {
	Model    string            `json:"model"`
	Messages []wireToolMessage `json:"messages"`
	Tools    []wireTool        `json:"tools"`
	Stream   bool              `json:"stream"`
}

// wireToolMessage is one message; Content is null only on an assistant
// message that carries tool calls and no text.
type wireToolMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string          `json:"type"`
	Function wireFunctionDef `json:"function"`
}

type wireFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// CompatibleBody is the exact body the compatible route sends for req: a
// pure function of req, so the request of any journaled send is rebuilt
// from the journal alone. A request with tools (or a tool exchange) is
// checked first: every tool name must be one CheckFunctionName accepts and
// offered once, every parameters text one JSON object, every "tool" message
// must answer a call ID of the assistant message before it. Problems are a
// *ConfigError; nothing is sent.
func CompatibleBody(req Request) ([]byte, error) {
	if !req.HasTools() {
		b, err := json.Marshal(wireRequest{Model: req.Model, Messages: req.Messages, Stream: false})
		if err != nil {
			return nil, replyErr(ClassRequestTooLarge, "the request could not be encoded as JSON")
		}
		return b, nil
	}
	if len(req.Tools) == 0 {
		return nil, configErr("tools", "the request carries a tool exchange but offers no tools",
			"build tool requests with the kmx-local-tools-v1 harness, which offers the tools on both sends")
	}
	w := wireToolRequest{Model: req.Model, Stream: false,
		Messages: make([]wireToolMessage, 0, len(req.Messages)), Tools: make([]wireTool, 0, len(req.Tools))}
	seen := make(map[string]bool, len(req.Tools))
	for _, d := range req.Tools {
		if err := CheckFunctionName(d.Name); err != nil {
			return nil, err
		}
		if seen[d.Name] {
			return nil, configErr("tools", fmt.Sprintf("the tool %q is offered twice", d.Name), "offer each tool once")
		}
		seen[d.Name] = true
		params := []byte(strings.TrimSpace(d.Parameters))
		if len(params) == 0 || params[0] != '{' || !json.Valid(params) {
			return nil, configErr("tools", fmt.Sprintf("the parameters of tool %q are not one JSON Schema object", d.Name),
				"give the tool a JSON object schema, for example {\"type\":\"object\"}")
		}
		w.Tools = append(w.Tools, wireTool{Type: "function",
			Function: wireFunctionDef{Name: d.Name, Description: d.Description, Parameters: params}})
	}
	var open map[string]bool // the call IDs the latest assistant message opened
	for i := range req.Messages {
		m := &req.Messages[i]
		wm := wireToolMessage{Role: m.Role, Content: &m.Content, ToolCallID: m.ToolCallID}
		switch {
		case len(m.ToolCalls) > 0:
			if m.Role != "assistant" {
				return nil, configErr("tools", "only an assistant message may carry tool calls", "build tool requests with the kmx-local-tools-v1 harness")
			}
			if m.Content == "" {
				wm.Content = nil
			}
			open = make(map[string]bool, len(m.ToolCalls))
			for _, tc := range m.ToolCalls {
				if !seen[tc.Name] || tc.ID == "" || open[tc.ID] {
					return nil, configErr("tools", "an assistant message carries a tool call that names no offered tool, has no ID or repeats one",
						"build tool requests with the kmx-local-tools-v1 harness")
				}
				open[tc.ID] = true
				wm.ToolCalls = append(wm.ToolCalls, wireToolCall{ID: tc.ID, Type: "function",
					Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments}})
			}
		case m.Role == "tool" || m.ToolCallID != "":
			if m.Role != "tool" || !open[m.ToolCallID] {
				return nil, configErr("tools", "a tool message answers no tool call of the assistant message before it",
					"build tool requests with the kmx-local-tools-v1 harness")
			}
			delete(open, m.ToolCallID)
		}
		w.Messages = append(w.Messages, wm)
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, replyErr(ClassRequestTooLarge, "the request could not be encoded as JSON")
	}
	return b, nil
}

// afterResults reports whether req already carries tool results on a
// harness that allows one round of calls: it is send 2, whose reply must
// be text. On a harness with ToolRounds the harness bounds the sends.
func (req Request) afterResults() bool {
	if req.ToolRounds {
		return false
	}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			return true
		}
	}
	return false
}

// DecodeToolReply strictly decodes a reply on the tool path. Every check of
// DecodeReply holds, with one place a tool call may be: the first choice's
// message.tool_calls (that exact key; any other spelling or place is still
// ClassToolCall). offered names the tools the request offered; after is
// true on the send after the tool results, where any call is ClassToolRound.
//
// A batch is 1 to MaxToolCalls calls, each {"id": non-empty and unique,
// "type": "function", "function": {"name": an offered name, "arguments": a
// string holding one JSON object with no repeated or aliased key at any
// depth}}, with finish_reason "tool_calls"; the message content may then be
// a string, null or absent. Without calls the reply is what DecodeReply
// accepts. Refusals name the class and the call's position only.
func DecodeToolReply(body []byte, wantModel string, offered []ToolDef, after bool) (Completion, error) {
	if !utf8.Valid(body) {
		return Completion{}, replyErr(ClassMalformed, "the body is not valid UTF-8")
	}
	var w replyWalk
	w.init(body, walkToolReply)
	if err := w.walk(); err != nil {
		return Completion{}, err
	}
	return w.fields.toolCompletion(body, wantModel, offered, after)
}

// toolCompletion applies the reply rules of the tool path to the fields of
// a body the walk accepted.
func (f *replyFields) toolCompletion(body []byte, wantModel string, offered []ToolDef, after bool) (Completion, error) {
	finish, err := f.choiceFinish(body, wantModel)
	if err != nil {
		return Completion{}, err
	}
	switch {
	case f.finishReason.kind != tokString:
		return Completion{}, replyErr(ClassFinishReason, "")
	case string(finish) == "stop", string(finish) == "tool_calls":
	case string(finish) == "length":
		return Completion{}, replyErr(ClassTruncated, "")
	case string(finish) == "content_filter":
		return Completion{}, replyErr(ClassContentFilter, "")
	case string(finish) == "function_call":
		return Completion{}, replyErr(ClassToolCall, "the legacy function-call form is not run; tools are offered as tool calls")
	default:
		return Completion{}, replyErr(ClassFinishReason, "")
	}
	if err := f.assistantMessage(body); err != nil {
		return Completion{}, err
	}
	var raw []json.RawMessage
	switch f.toolCalls.kind {
	case 0, tokNull:
	case tokArrayOpen:
		if err := json.Unmarshal(body[f.toolCalls.start:f.toolCalls.end], &raw); err != nil {
			return Completion{}, replyErr(ClassToolBatch, "the message's tool calls are not a list")
		}
	default:
		return Completion{}, replyErr(ClassToolBatch, "the message's tool calls are not a list")
	}
	called := len(raw) > 0 || string(finish) == "tool_calls"
	if called && after {
		return Completion{}, replyErr(ClassToolRound, "")
	}
	if !called {
		if f.content.kind != tokString || strings.TrimSpace(string(f.content.text(body))) == "" {
			return Completion{}, replyErr(ClassContent, "")
		}
		return Completion{Model: wantModel, Text: string(f.content.text(body)), FinishReason: "stop", Usage: f.tokenUsage(body)}, nil
	}
	switch {
	case len(raw) == 0:
		return Completion{}, replyErr(ClassToolBatch, "the finish reason says tool calls but the message has none")
	case string(finish) != "tool_calls":
		return Completion{}, replyErr(ClassFinishReason, "the message has tool calls but the finish reason does not say so")
	case len(raw) > MaxToolCalls:
		return Completion{}, replyErr(ClassToolBatch, fmt.Sprintf("the reply requests %d tool calls; at most %d are allowed in one batch", len(raw), MaxToolCalls))
	}
	var text string
	switch f.content.kind {
	case 0, tokNull:
	case tokString:
		text = string(f.content.text(body))
	default:
		return Completion{}, replyErr(ClassContent, "")
	}
	calls := make([]ToolCall, 0, len(raw))
	for i, r := range raw {
		tc, err := decodeToolCall(r, i+1, offered)
		if err != nil {
			return Completion{}, err
		}
		for _, prev := range calls {
			if prev.ID == tc.ID {
				return Completion{}, replyErr(ClassToolBatch, fmt.Sprintf("tool call %d repeats a call ID of the same batch", i+1))
			}
		}
		calls = append(calls, tc)
	}
	return Completion{Model: wantModel, Text: text, FinishReason: "tool_calls", ToolCalls: calls, Usage: f.tokenUsage(body)}, nil
}

// decodeToolCall reads the n-th call of a batch by its exact field names
// (the walk already refused repeated and aliased keys).
func decodeToolCall(raw json.RawMessage, n int, offered []ToolDef) (ToolCall, error) {
	var call, fn map[string]json.RawMessage
	if json.Unmarshal(raw, &call) != nil || call == nil {
		return ToolCall{}, replyErr(ClassToolBatch, fmt.Sprintf("tool call %d is not an object", n))
	}
	id, ok := jsonString(call["id"])
	if !ok || id == "" {
		return ToolCall{}, replyErr(ClassToolBatch, fmt.Sprintf("tool call %d has no call ID", n))
	}
	if typ, ok := jsonString(call["type"]); !ok || typ != "function" {
		return ToolCall{}, replyErr(ClassToolBatch, fmt.Sprintf(`tool call %d's type is not "function"`, n))
	}
	if json.Unmarshal(call["function"], &fn) != nil || fn == nil {
		return ToolCall{}, replyErr(ClassToolBatch, fmt.Sprintf("tool call %d has no function object", n))
	}
	name, ok := jsonString(fn["name"])
	if !ok {
		return ToolCall{}, replyErr(ClassToolBatch, fmt.Sprintf("tool call %d has no function name", n))
	}
	known := false
	for _, d := range offered {
		known = known || d.Name == name
	}
	if !known {
		return ToolCall{}, replyErr(ClassToolName, fmt.Sprintf("tool call %d", n))
	}
	args, ok := jsonString(fn["arguments"])
	if !ok {
		return ToolCall{}, replyErr(ClassToolArguments, fmt.Sprintf("tool call %d's arguments are not a string", n))
	}
	if err := checkArguments([]byte(args)); err != nil {
		return ToolCall{}, replyErr(ClassToolArguments, fmt.Sprintf("tool call %d's arguments %s", n, err.Error()))
	}
	return ToolCall{ID: id, Name: name, Arguments: args}, nil
}

// checkArguments holds a call's decoded arguments to the reply's own
// rules: one JSON object, nothing after it, no key repeated in one object
// exactly or as a case-insensitive alias, at any depth. The error says
// which, in kmx's words, to follow "arguments".
func checkArguments(args []byte) error {
	var w replyWalk
	w.init(args, walkPlain)
	err := w.walk()
	if err == nil {
		return nil
	}
	if re, ok := err.(*ReplyError); ok && re.Class == ClassDuplicateKey {
		return fmt.Errorf("repeat a key in one object (exactly or as a case-insensitive alias)")
	}
	return fmt.Errorf("are not one JSON object")
}

// jsonString decodes raw as a JSON string; absent, null and any other type
// report false.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
