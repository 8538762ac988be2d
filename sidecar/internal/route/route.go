// Package route owns the model routes kmx can send a request on (the
// deterministic fake model, OpenAI-compatible endpoints with strict reply
// checks, and the editor route: the models VS Code offers, reached through
// an EditorHost and resolved once per invocation) and the one interface the
// harness calls them through.
//
// A route never retries, never falls back to another model and never
// rewrites what it was asked to reach. Errors name the class of problem only:
// never a request or reply body, a prompt, an answer or a credential.
package route

import "context"

// Route names.
const (
	// Fake is kmx's deterministic in-memory model.
	Fake = "fake"
	// Replay answers only from a journaled completion; see the harness.
	Replay = "replay"
)

// Identity is what a turn records about the model that answered it.
type Identity struct {
	// Route is the route name, for example "fake".
	Route string `json:"route"`
	// Model is the exact model name requested on that route.
	Model string `json:"model"`
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user", "assistant" or "tool"
	Content string `json:"content"`
	// ToolCalls is an assistant message's tool call batch (tool turns only).
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID names the call a "tool" message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
}

// ToolCall is one tool call a model requested: Arguments is JSON text.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolDef is one tool offered to the model. Parameters is a JSON Schema.
type ToolDef struct {
	// Name is the function name the model calls the tool by: it matches
	// ^[A-Za-z0-9_-]{1,64}$ for every tool of VS Code's reference table
	// and every MCP stub (edit_editFiles for edit/editFiles).
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  string `json:"parameters"`
	// Aliases are the names an agent file writes for the tool (its
	// canonical name and declared reference), for the fake model's
	// directive. Never sent, never part of the request's digest.
	Aliases []string `json:"-"`
}

// Request is one Chat Completions-style request: instructions as the system
// message, the input as the user message. Tools is empty on the tool-free
// chat path, and then leaves the request's JSON (and digest) unchanged.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []ToolDef `json:"tools,omitempty"`
	// ToolRounds is set by a harness that lets a reply after tool results
	// request tools again (kmx-workspace-tools-v1: read, then edit, up to
	// its eight sends, which the harness bounds). Without it a request
	// carrying tool results is the last send of kmx-local-tools-v1, whose
	// reply must be text. Not part of the request's journaled form.
	ToolRounds bool `json:"-"`
}

// Completion is a model's checked answer.
type Completion struct {
	// Model is the model name the reply reported.
	Model string `json:"model"`
	Text  string `json:"text"`
	// FinishReason is the reply's finish reason ("stop" for the fake model,
	// "tool_calls" when it requested tools).
	FinishReason string `json:"finishReason"`
	// ToolCalls is the batch of tool calls the model requested, if any.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Usage is the token usage the route reported for this send; nil when
	// it reported none (a budget on tokens is then unknown, never a pass).
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is one send's token usage as a route reports it: an endpoint's
// `usage` object, or the fake model's deterministic count.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
}

// HasTools reports whether req offers tools or carries a tool exchange.
func (req Request) HasTools() bool {
	if len(req.Tools) > 0 {
		return true
	}
	for _, m := range req.Messages {
		if len(m.ToolCalls) > 0 || m.ToolCallID != "" || m.Role == "tool" {
			return true
		}
	}
	return false
}

// Model sends one request and returns one checked completion. Implementations
// are safe for concurrent use and honour ctx cancellation by stopping the
// request in flight.
type Model interface {
	Identity() Identity
	Complete(ctx context.Context, req Request) (Completion, error)
}

// ChatRequest builds the one request a chat turn sends.
func ChatRequest(model, instructions, input string) Request {
	return ChatRequestWithHistory(model, instructions, nil, input)
}

// ChatRequestWithHistory builds the request of a conversation turn: the
// instructions, every earlier message (user and assistant, oldest first),
// then the input. With no history it is exactly ChatRequest, so a
// single-turn example's request (and its journaled digest) is unchanged.
func ChatRequestWithHistory(model, instructions string, history []Message, input string) Request {
	msgs := make([]Message, 0, len(history)+2)
	msgs = append(msgs, Message{Role: "system", Content: instructions})
	msgs = append(msgs, history...)
	msgs = append(msgs, Message{Role: "user", Content: input})
	return Request{Model: model, Messages: msgs}
}
