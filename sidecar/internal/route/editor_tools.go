package route

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Editor tools: on the tool harness, each offered tool binds to the tool
// VS Code itself would use for it (vscode.lm.tools, by the id VS Code
// registers for the reference, or a declared name's own name), or stays a
// stub answering "not available in this test". The
// binding is made once per invocation, before the journal exists, and
// frozen; each call goes through vscode.lm.invokeTool, where VS Code keeps
// its own confirmation and permission handling, after the extension has
// checked that the tool it offers under that name is still exactly the
// frozen one. kmx adds no approval, retry or fallback.

// MaxEditorToolResultBytes is where the extension stops reading a tool's
// result (the harness's 32 KiB result bound refuses it then).
const MaxEditorToolResultBytes = 32 << 10

// EditorToolInfo is one tool VS Code offers, as the extension lists it from
// vscode.lm.tools, and the binding kmx freezes.
type EditorToolInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// InputSchema is the tool's JSON schema as VS Code offers it (absent
	// when the tool declares none).
	InputSchema map[string]any `json:"inputSchema,omitempty"`
	Tags        []string       `json:"tags"`
}

// EditorToolsParams is the params of kmx/languageModel/tools.
type EditorToolsParams struct{}

// EditorToolsResult lists every tool VS Code offers now.
type EditorToolsResult struct {
	Tools []EditorToolInfo `json:"tools"`
}

// EditorInvokeToolParams is the params of kmx/languageModel/invokeTool: one
// call of a bound tool. Tool is the binding as frozen: the extension
// refuses (tool-unavailable) unless VS Code offers exactly one tool of that
// name, with that description and input schema, right before the call.
type EditorInvokeToolParams struct {
	Tool EditorToolInfo `json:"tool"`
	// Input is the call's arguments, a JSON object.
	Input map[string]any `json:"input"`
	// MaxResultBytes is where the extension stops reading the result and
	// answers oversized instead.
	MaxResultBytes int `json:"maxResultBytes"`
}

// EditorInvokeToolResult is a tool's answer: its text parts, joined.
type EditorInvokeToolResult struct {
	Text string `json:"text"`
}

// Editor tool classes: what the extension answers a refused or failed
// kmx/languageModel/invokeTool with (besides cancelled and oversized).
const (
	// EditorToolUnavailable: VS Code no longer offers exactly the bound
	// tool under its name (it went away, changed, or a second one appeared).
	EditorToolUnavailable EditorClass = "tool-unavailable"
	// EditorToolDeclined: VS Code's confirmation was declined (the call was
	// cancelled without kmx cancelling it).
	EditorToolDeclined EditorClass = "tool-declined"
	// EditorToolFailed: the tool threw.
	EditorToolFailed EditorClass = "tool-failed"
)

// ToolBindError is a declared tool name the editor route could not bind to
// exactly one tool VS Code offers. It is raised before any journal exists.
type ToolBindError struct {
	Msg  string
	Next string
}

func (e *ToolBindError) Error() string { return e.Msg + ": " + e.Next }

// EditorToolWant is one offered tool the editor route may bind: the
// function name the model calls it by, and the vscode.lm.tools names that
// implement it, preferred first. For a tool of VS Code's reference table
// these are the ids VS Code registers it under (vscode.lm.tools exposes a
// tool's id as its name, never its reference name), for any other declared
// name the name itself; an MCP stub has none.
type EditorToolWant struct {
	Function string
	Names    []string
}

// BindEditorTools binds each wanted tool to the tool VS Code offers under
// the first of its names that VS Code offers exactly once (no case
// folding, no prefix match). A tool none of whose names VS Code offers is
// left unbound: it answers "not available in this test", never a refusal.
// A name VS Code offers several times refuses: kmx never picks one.
func BindEditorTools(wants []EditorToolWant, offered []EditorToolInfo) (map[string]EditorToolInfo, error) {
	out := make(map[string]EditorToolInfo, len(wants))
	for _, w := range wants {
		for _, name := range w.Names {
			var hits []EditorToolInfo
			for _, t := range offered {
				if t.Name == name {
					hits = append(hits, t)
				}
			}
			if len(hits) > 1 {
				return nil, &ToolBindError{
					Msg:  fmt.Sprintf("the tool name %q matches %d tools VS Code offers", name, len(hits)),
					Next: "kmx binds a tool to exactly one tool VS Code offers: disable or uninstall all but one of them, or set the tool Disabled in kmx.yaml",
				}
			}
			if len(hits) == 1 {
				out[w.Function] = hits[0]
				break
			}
		}
	}
	return out, nil
}

// BindTools freezes the session's tool bindings (name to the tool VS Code
// offered at preflight). It is called once, before the first send.
func (s *EditorSession) BindTools(bound map[string]EditorToolInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools = bound
}

func (s *EditorSession) tool(name string) (EditorToolInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	return t, ok
}

// InvokeTool makes one call of the bound tool name through VS Code
// (vscode.lm.invokeTool) and returns its text. Nothing is retried. A
// failed call fails its example only; cancellation reaches the extension
// (its token fires).
func (s *EditorSession) InvokeTool(ctx context.Context, name, arguments string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", &EditorError{Class: EditorCancelled, err: err}
	}
	t, ok := s.tool(name)
	if !ok {
		return "", &EditorError{Class: EditorToolUnavailable}
	}
	var input map[string]any
	if err := json.Unmarshal([]byte(arguments), &input); err != nil || input == nil {
		return "", &EditorError{Class: EditorMalformed}
	}
	res, err := s.host.InvokeTool(ctx, EditorInvokeToolParams{Tool: t, Input: input, MaxResultBytes: MaxEditorToolResultBytes})
	if err != nil {
		var ee *EditorError
		switch {
		case ctx.Err() != nil:
			return "", &EditorError{Class: EditorCancelled, err: ctx.Err()}
		case errors.As(err, &ee):
			return "", ee
		}
		return "", &EditorError{Class: EditorMalformed}
	}
	return res.Text, nil
}

// toolDefinitions is what a request's tools are offered to the model as,
// each under its function name: a bound tool with VS Code's own
// description and input schema, any other (Disabled, a stub) with kmx's
// definition.
func (s *EditorSession) toolDefinitions(defs []ToolDef) []EditorToolDefinition {
	out := make([]EditorToolDefinition, 0, len(defs))
	for _, d := range defs {
		if t, ok := s.tool(d.Name); ok {
			// Offered under the function name the harness validates calls
			// by; the call goes to the bound tool's own name.
			out = append(out, EditorToolDefinition{Name: d.Name, Description: t.Description, InputSchema: t.InputSchema})
			continue
		}
		var schema map[string]any
		if json.Unmarshal([]byte(d.Parameters), &schema) != nil {
			schema = map[string]any{"type": "object"}
		}
		out = append(out, EditorToolDefinition{Name: d.Name, Description: d.Description, InputSchema: schema})
	}
	return out
}
