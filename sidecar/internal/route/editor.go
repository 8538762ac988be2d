package route

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"unicode/utf8"
)

// Editor is the route name of the models VS Code offers through its
// Language Model API (vscode.lm). kmx reaches them only through an
// EditorHost, which the language server implements with server→client
// requests to the extension; outside the editor there is no host and the
// route refuses.
const Editor = "editor"

// MaxEditorReplyBytes caps the text of one editor reply, as MaxBodyBytes
// caps a compatible reply body.
const MaxEditorReplyBytes = MaxBodyBytes

// EditorModelInfo is one chat model VS Code offers, as the extension lists
// it from vscode.lm.selectChatModels(). Handle names the extension's own
// LanguageModelChat object of that listing, so a send reaches exactly the
// object the preflight resolved, never a fresh selection.
type EditorModelInfo struct {
	Handle         string `json:"handle"`
	ID             string `json:"id"`
	Name           string `json:"name"`
	Vendor         string `json:"vendor"`
	Family         string `json:"family"`
	Version        string `json:"version"`
	MaxInputTokens int    `json:"maxInputTokens"`
}

// EditorModelIdentity is what a reply must come from: exactly these fields
// of the resolved model.
type EditorModelIdentity struct {
	Vendor  string `json:"vendor"`
	ID      string `json:"id"`
	Family  string `json:"family"`
	Version string `json:"version"`
}

// QualifiedName is VS Code's qualified model name, `Name (vendor)`.
func (m EditorModelInfo) QualifiedName() string { return m.Name + " (" + m.Vendor + ")" }

// Identity is the model's reply identity.
func (m EditorModelInfo) Identity() EditorModelIdentity {
	return EditorModelIdentity{Vendor: m.Vendor, ID: m.ID, Family: m.Family, Version: m.Version}
}

// JournalName is the model name kmx journals and reports for the model:
// vendor and id, "copilot/gpt-4.1".
func (m EditorModelInfo) JournalName() string { return m.Vendor + "/" + m.ID }

// EditorModelsParams is the params of kmx/languageModel/models.
type EditorModelsParams struct{}

// EditorModelsResult lists every chat model VS Code offers now.
type EditorModelsResult struct {
	Models []EditorModelInfo `json:"models"`
}

// EditorToolDefinition is one tool offered to the model (the tool harness;
// empty on the tool-free path).
type EditorToolDefinition struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// InputSchema is the tool's JSON schema, passed through as JSON.
	InputSchema map[string]any `json:"inputSchema,omitempty"`
}

// EditorSendParams is the params of kmx/languageModel/send: one request to
// the preflight-resolved model. The extension maps the system message to
// the first User message (vscode.lm has no system role) and the user
// message to the second.
type EditorSendParams struct {
	Handle   string              `json:"handle"`
	Model    EditorModelIdentity `json:"model"`
	Messages []Message           `json:"messages"`
	// Tools offered to the model; empty on the tool-free path.
	Tools []EditorToolDefinition `json:"tools"`
	// MaxReplyBytes is where the extension stops reading the reply and
	// answers oversized instead.
	MaxReplyBytes int `json:"maxReplyBytes"`
}

// EditorToolCall is one tool-call part of a reply.
type EditorToolCall struct {
	CallID string `json:"callId"`
	Name   string `json:"name"`
	// Input is the call's arguments as the model gave them.
	Input map[string]any `json:"input"`
}

// EditorSendResult is the reply: the identity of the model the extension
// actually sent to, the joined text parts and the tool-call parts. Nothing
// is streamed.
type EditorSendResult struct {
	Model     EditorModelIdentity `json:"model"`
	Text      string              `json:"text"`
	ToolCalls []EditorToolCall    `json:"toolCalls"`
}

// EditorErrorData is the data of a JSON-RPC error the extension answers
// kmx/languageModel/send with: the class only, never the provider's text.
type EditorErrorData struct {
	Class EditorClass `json:"class"`
}

// EditorClass names why an editor request or reply was refused. The classes
// are stable (docs/routes.md lists them); error text is built from the class
// alone.
type EditorClass string

// Editor route classes. The first group is what the extension reports; the
// second what kmx itself finds in a reply or a run.
const (
	// EditorUnavailable: the resolved model is no longer offered (its
	// provider went away, the listing changed) or VS Code reports NotFound.
	EditorUnavailable EditorClass = "model-unavailable"
	// EditorNoPermissions: the person declined VS Code's consent, or the
	// extension may not use the model (LanguageModelError.NoPermissions).
	EditorNoPermissions EditorClass = "no-permissions"
	// EditorBlocked: the provider refused the request: quota, rate limit or
	// authentication (LanguageModelError.Blocked).
	EditorBlocked EditorClass = "blocked"
	// EditorProviderError: the provider failed in any other way.
	EditorProviderError EditorClass = "provider-error"
	// EditorCancelled: the request was cancelled.
	EditorCancelled EditorClass = "cancelled"
	// EditorOversized: the reply text is over 1 MiB.
	EditorOversized EditorClass = "oversized"

	// EditorModelMismatch: the reply came from another model than the one
	// resolved (vendor, id, family or version differ).
	EditorModelMismatch EditorClass = "model"
	// EditorToolCallClass: a tool-call part on the tool-free path.
	EditorToolCallClass EditorClass = "tool-call"
	// EditorEmpty: the answer is empty or whitespace only.
	EditorEmpty EditorClass = "content"
	// EditorMalformed: the reply is not what the contract says (invalid
	// UTF-8, an unknown error class, a broken JSON-RPC answer).
	EditorMalformed EditorClass = "malformed"
	// EditorStopped: an earlier editor request of this invocation failed,
	// so this one was not sent (no retry, no fallback).
	EditorStopped EditorClass = "stopped"
	// EditorNoHost: kmx runs outside VS Code, so no editor model exists.
	EditorNoHost EditorClass = "no-editor"
)

// KnownEditorClass reports whether c is a class the extension may send.
func KnownEditorClass(c EditorClass) bool {
	switch c {
	case EditorUnavailable, EditorNoPermissions, EditorBlocked, EditorProviderError, EditorCancelled, EditorOversized,
		EditorToolUnavailable, EditorToolDeclined, EditorToolFailed:
		return true
	}
	return false
}

func (c EditorClass) text() string {
	switch c {
	case EditorUnavailable:
		return "the model is no longer offered by VS Code; start a new run to choose again"
	case EditorNoPermissions:
		return "VS Code did not allow kmx to use the model (consent declined or not permitted); allow it when VS Code asks, then start a new run"
	case EditorBlocked:
		return "the model's provider refused the request (quota, rate limit or sign-in); check the provider in VS Code, then start a new run"
	case EditorProviderError:
		return "the model's provider failed to answer"
	case EditorCancelled:
		return "the request was cancelled"
	case EditorOversized:
		return "the answer is over its size limit (1 MiB for a model's answer, 32 KiB for a tool's result)"
	case EditorModelMismatch:
		return "the answer did not come from exactly the resolved model (vendor, id, family and version)"
	case EditorToolCallClass:
		return "the answer carries a tool call, which the tool-free path does not execute"
	case EditorEmpty:
		return "the answer is empty"
	case EditorMalformed:
		return "the editor's reply is not what the kmx protocol says"
	case EditorStopped:
		return "not sent: an earlier editor model request of this run failed; start a new run"
	case EditorNoHost:
		return "editor models are only reachable inside VS Code"
	case EditorToolUnavailable:
		return "VS Code no longer offers exactly the tool bound at the start of the run; start a new run to bind again"
	case EditorToolDeclined:
		return "the tool call was declined in VS Code's confirmation"
	case EditorToolFailed:
		return "the tool failed in VS Code"
	}
	return "the editor request was refused"
}

// EditorError is a refused editor request or reply. The example that asked
// is unknown, never a pass. Its text is the class's fixed explanation only.
type EditorError struct {
	Class EditorClass
	err   error
}

// NewEditorError builds an EditorError of class c; cause, when not nil, is
// a context error for errors.Is and is never shown.
func NewEditorError(c EditorClass, cause error) *EditorError {
	return &EditorError{Class: c, err: cause}
}

func (e *EditorError) Error() string { return "editor route: " + e.Class.text() }

// Unwrap exposes a context cause (context.Canceled, DeadlineExceeded).
func (e *EditorError) Unwrap() error { return e.err }

// EditorHost sends the editor route's requests to VS Code. The language
// server implements it over JSON-RPC; tests script it.
type EditorHost interface {
	// Models lists the chat models VS Code offers now.
	Models(ctx context.Context) ([]EditorModelInfo, error)
	// Send sends one request. A refusal by the extension is an
	// *EditorError with the class it named; ctx cancels the request in
	// flight (the extension sees its cancellation token fire).
	Send(ctx context.Context, p EditorSendParams) (EditorSendResult, error)
	// Tools lists the tools VS Code offers now (vscode.lm.tools).
	Tools(ctx context.Context) ([]EditorToolInfo, error)
	// InvokeTool calls one bound tool through vscode.lm.invokeTool;
	// errors and cancellation as Send.
	InvokeTool(ctx context.Context, p EditorInvokeToolParams) (EditorInvokeToolResult, error)
}

// EditorSession is one invocation's snapshot of the editor route: the
// models its preflight resolved, all sharing one stop flag. After any
// failed send, every later send of the invocation is refused unsent
// (EditorStopped): no retry, no re-selection, no fallback.
type EditorSession struct {
	host    EditorHost
	mu      sync.Mutex
	stopped EditorClass
	// tools is the frozen tool binding (BindTools), by declared name.
	tools map[string]EditorToolInfo
}

// NewEditorSession starts the snapshot of one invocation.
func NewEditorSession(host EditorHost) *EditorSession {
	return &EditorSession{host: host}
}

// Model returns the route for one resolved model of this session.
func (s *EditorSession) Model(info EditorModelInfo) *EditorModel {
	return &EditorModel{session: s, info: info}
}

func (s *EditorSession) stop(c EditorClass) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped == "" {
		s.stopped = c
	}
}

func (s *EditorSession) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped != ""
}

// EditorModel is one preflight-resolved editor model. It is safe for
// concurrent use.
type EditorModel struct {
	session *EditorSession
	info    EditorModelInfo
}

var _ Model = (*EditorModel)(nil)

// Identity names the editor route and the model's vendor and id.
func (m *EditorModel) Identity() Identity {
	return Identity{Route: Editor, Model: m.info.JournalName()}
}

// Info is the resolved model as the extension listed it.
func (m *EditorModel) Info() EditorModelInfo { return m.info }

// Complete sends req once through the host and checks the reply strictly:
// exactly the resolved model, a non-empty answer of at most 1 MiB of valid
// UTF-8, and no tool-call part unless the request offers tools (the tool
// harness, where a reply with tool calls may have no text). Any failure
// stops the session.
func (m *EditorModel) Complete(ctx context.Context, req Request) (Completion, error) {
	if err := ctx.Err(); err != nil {
		return Completion{}, &EditorError{Class: EditorCancelled, err: err}
	}
	if m.session.isStopped() {
		return Completion{}, &EditorError{Class: EditorStopped}
	}
	if req.Model != m.info.JournalName() {
		// The harness asks for the identity it was placed with; anything
		// else is a kmx bug, refused before anything is sent.
		return Completion{}, &EditorError{Class: EditorModelMismatch}
	}
	withTools := req.HasTools()
	res, err := m.session.host.Send(ctx, EditorSendParams{
		Handle:        m.info.Handle,
		Model:         m.info.Identity(),
		Messages:      req.Messages,
		Tools:         m.session.toolDefinitions(req.Tools),
		MaxReplyBytes: MaxEditorReplyBytes,
	})
	if err != nil {
		return Completion{}, m.fail(ctx, err)
	}
	calls, class := checkEditorReply(m.info.Identity(), res, withTools)
	if class != "" {
		m.session.stop(class)
		return Completion{}, &EditorError{Class: class}
	}
	c := Completion{Model: m.info.JournalName(), Text: res.Text, FinishReason: "stop", ToolCalls: calls}
	if len(calls) > 0 {
		c.FinishReason = "tool_calls"
	}
	return c, nil
}

// fail turns a host error into an EditorError and stops the session.
func (m *EditorModel) fail(ctx context.Context, err error) error {
	var ee *EditorError
	switch {
	case ctx.Err() != nil:
		ee = &EditorError{Class: EditorCancelled, err: ctx.Err()}
	case errors.As(err, &ee):
	default:
		ee = &EditorError{Class: EditorMalformed}
	}
	m.session.stop(ee.Class)
	return ee
}

// checkEditorReply returns the reply's tool calls (arguments as JSON text)
// and the class of its first problem, or "".
func checkEditorReply(want EditorModelIdentity, res EditorSendResult, withTools bool) ([]ToolCall, EditorClass) {
	switch {
	case res.Model != want:
		return nil, EditorModelMismatch
	case len(res.ToolCalls) > 0 && !withTools:
		return nil, EditorToolCallClass
	case len(res.Text) > MaxEditorReplyBytes:
		return nil, EditorOversized
	case !utf8.ValidString(res.Text):
		return nil, EditorMalformed
	case strings.TrimSpace(res.Text) == "" && len(res.ToolCalls) == 0:
		return nil, EditorEmpty
	}
	var calls []ToolCall
	for _, tc := range res.ToolCalls {
		args, err := json.Marshal(tc.Input)
		if err != nil || tc.Input == nil {
			return nil, EditorMalformed
		}
		calls = append(calls, ToolCall{ID: tc.CallID, Name: tc.Name, Arguments: string(args)})
	}
	return calls, ""
}
