package route

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var echoTool = EditorToolInfo{Name: "echo", Description: "Echoes its text.", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}

func want(fn string, names ...string) EditorToolWant {
	return EditorToolWant{Function: fn, Names: names}
}

// A reference binds to the entry VS Code registers for it (by its id, the
// first one offered), a declared name to its own name; exact names only
// (no case folding, no prefix), and nothing matching leaves it unbound (a
// stub), never a refusal.
func TestBindEditorTools(t *testing.T) {
	codebase := EditorToolInfo{Name: "copilot_searchCodebase", Description: "Searches."}
	insert := EditorToolInfo{Name: "copilot_insertEdit", Description: "Edits."}
	offered := []EditorToolInfo{codebase, echoTool, {Name: "Echo"}, insert, {Name: "ech"}}
	got, err := BindEditorTools([]EditorToolWant{
		want("search_codebase", "copilot_searchCodebase"),
		want("edit_editFiles", "copilot_replaceString", "copilot_insertEdit"),
		want("echo", "echo"),
		want("ECHO", "ECHO"),
		want("ec", "ec"),
		want("github_all"),
		want("web_fetch", "copilot_fetchWebPage"),
	}, offered)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, map[string]EditorToolInfo{"search_codebase": codebase, "edit_editFiles": insert, "echo": echoTool}) {
		t.Fatalf("bound = %+v", got)
	}
	if got, err := BindEditorTools([]EditorToolWant{want("echo", "echo")}, nil); err != nil || len(got) != 0 {
		t.Fatalf("nothing offered: %v, %v; want nothing bound and no refusal", got, err)
	}
}

// A name VS Code offers twice refuses: kmx never picks one of them.
func TestBindEditorToolsRefusesAmbiguity(t *testing.T) {
	_, err := BindEditorTools([]EditorToolWant{want("echo", "echo")}, []EditorToolInfo{echoTool, {Name: "echo", Description: "another"}})
	var be *ToolBindError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v, want a *ToolBindError", err)
	}
	for _, w := range []string{`"echo" matches 2 tools`, "exactly one"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func toolRequest() Request {
	req := ChatRequest("copilot/gpt-4.1", "sys", "in")
	req.Tools = []ToolDef{{Name: "echo", Description: "Declared tool echo.", Parameters: `{"type":"object"}`},
		{Name: "off", Description: "Declared tool off. Disabled for this test.", Parameters: `{"type":"object"}`}}
	return req
}

func TestEditorModelOffersBoundToolsAndMapsCalls(t *testing.T) {
	h := &scriptedHost{reply: func(p EditorSendParams) (EditorSendResult, error) {
		return EditorSendResult{Model: p.Model, ToolCalls: []EditorToolCall{{CallID: "call-1", Name: "echo", Input: map[string]any{"text": "hi"}}}}, nil
	}}
	s := NewEditorSession(h)
	s.BindTools(map[string]EditorToolInfo{"echo": echoTool})
	c, err := s.Model(gpt41).Complete(context.Background(), toolRequest())
	if err != nil {
		t.Fatal(err)
	}
	// A reply of tool calls alone is an answer on the tool path.
	want := []ToolCall{{ID: "call-1", Name: "echo", Arguments: `{"text":"hi"}`}}
	if !reflect.DeepEqual(c.ToolCalls, want) || c.FinishReason != "tool_calls" {
		t.Fatalf("completion = %+v", c)
	}
	// The bound tool is offered as VS Code describes it; the Disabled one
	// with kmx's own definition.
	defs := h.sends[0].Tools
	if len(defs) != 2 || defs[0].Description != echoTool.Description || !reflect.DeepEqual(defs[0].InputSchema, echoTool.InputSchema) ||
		defs[1].Name != "off" || !strings.Contains(defs[1].Description, "Disabled") || defs[1].InputSchema["type"] != "object" {
		t.Fatalf("offered = %+v", defs)
	}
	// On the tool path a text-only reply still must not be empty.
	h.reply = answer("")
	if _, err := NewEditorSession(h).Model(gpt41).Complete(context.Background(), toolRequest()); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("err = %v, want empty", err)
	}
}

func TestEditorSessionInvokeTool(t *testing.T) {
	h := &scriptedHost{invoke: func(_ context.Context, p EditorInvokeToolParams) (EditorInvokeToolResult, error) {
		return EditorInvokeToolResult{Text: "hi"}, nil
	}}
	s := NewEditorSession(h)
	s.BindTools(map[string]EditorToolInfo{"echo": echoTool})
	got, err := s.InvokeTool(context.Background(), "echo", `{"text":"hi"}`)
	if err != nil || got != "hi" {
		t.Fatalf("got %q, %v", got, err)
	}
	p := h.invokes[0]
	if !reflect.DeepEqual(p.Tool, echoTool) || p.Input["text"] != "hi" || p.MaxResultBytes != MaxEditorToolResultBytes {
		t.Fatalf("invoke params = %+v", p)
	}
	// An unbound name is never sent.
	var ee *EditorError
	if _, err := s.InvokeTool(context.Background(), "other", `{}`); !errors.As(err, &ee) || ee.Class != EditorToolUnavailable || len(h.invokes) != 1 {
		t.Fatalf("unbound: err = %v, invokes = %d", err, len(h.invokes))
	}
}

func TestEditorSessionInvokeToolFailures(t *testing.T) {
	cases := []struct {
		name   string
		invoke func(context.Context, EditorInvokeToolParams) (EditorInvokeToolResult, error)
		want   EditorClass
	}{
		{"changed since binding", func(context.Context, EditorInvokeToolParams) (EditorInvokeToolResult, error) {
			return EditorInvokeToolResult{}, &EditorError{Class: EditorToolUnavailable}
		}, EditorToolUnavailable},
		{"declined", func(context.Context, EditorInvokeToolParams) (EditorInvokeToolResult, error) {
			return EditorInvokeToolResult{}, &EditorError{Class: EditorToolDeclined}
		}, EditorToolDeclined},
		{"throws", func(context.Context, EditorInvokeToolParams) (EditorInvokeToolResult, error) {
			return EditorInvokeToolResult{}, &EditorError{Class: EditorToolFailed}
		}, EditorToolFailed},
		{"broken host", func(context.Context, EditorInvokeToolParams) (EditorInvokeToolResult, error) {
			return EditorInvokeToolResult{}, errors.New("SECRET-TOOL-TEXT")
		}, EditorMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &scriptedHost{invoke: c.invoke}
			s := NewEditorSession(h)
			s.BindTools(map[string]EditorToolInfo{"echo": echoTool})
			_, err := s.InvokeTool(context.Background(), "echo", `{"text":"hi"}`)
			var ee *EditorError
			if !errors.As(err, &ee) || ee.Class != c.want || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("err = %v, want class %s", err, c.want)
			}
			// Nothing is retried.
			if len(h.invokes) != 1 {
				t.Fatalf("invokes = %d, want 1", len(h.invokes))
			}
		})
	}
	// A cancelled call is cancelled, whatever the host says.
	ctx, cancel := context.WithCancel(context.Background())
	h := &scriptedHost{invoke: func(context.Context, EditorInvokeToolParams) (EditorInvokeToolResult, error) {
		cancel()
		return EditorInvokeToolResult{}, errors.New("gone")
	}}
	s := NewEditorSession(h)
	s.BindTools(map[string]EditorToolInfo{"echo": echoTool})
	if _, err := s.InvokeTool(ctx, "echo", `{}`); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want cancelled", err)
	}
	if _, err := s.InvokeTool(ctx, "echo", `{}`); !errors.Is(err, context.Canceled) || len(h.invokes) != 1 {
		t.Fatalf("after cancel: err = %v, invokes = %d", err, len(h.invokes))
	}
}
