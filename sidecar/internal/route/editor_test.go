package route

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

var (
	gpt41  = EditorModelInfo{Handle: "1/0", ID: "gpt-4.1", Name: "GPT-4.1", Vendor: "copilot", Family: "gpt-4.1", Version: "2025-04-14"}
	sonnet = EditorModelInfo{Handle: "1/1", ID: "claude-sonnet-4.6", Name: "Claude Sonnet 4.6", Vendor: "copilot", Family: "claude-sonnet-4.6", Version: "1"}
	local  = EditorModelInfo{Handle: "1/2", ID: "gpt-4.1", Name: "GPT-4.1", Vendor: "ollama", Family: "gpt-4.1", Version: "1"}
	other  = EditorModelInfo{Handle: "1/3", ID: "llama3.2", Name: "Claude Sonnet 4.6", Vendor: "ollama", Family: "llama", Version: "3.2"}
)

func TestResolveEditorModel(t *testing.T) {
	offered := []EditorModelInfo{gpt41, sonnet}
	cases := []struct {
		name string
		refs []string
		want EditorModelInfo
	}{
		{"by id", []string{"gpt-4.1"}, gpt41},
		{"by display name", []string{"GPT-4.1"}, gpt41},
		{"by qualified name", []string{"Claude Sonnet 4.6 (copilot)"}, sonnet},
		{"first that resolves", []string{"gpt-9", "Claude Sonnet 4.6", "gpt-4.1"}, sonnet},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResolveEditorModel(c.refs, offered)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestResolveEditorModelRefuses(t *testing.T) {
	cases := []struct {
		name    string
		refs    []string
		offered []EditorModelInfo
		want    []string
	}{
		{"trailing space", []string{"gpt-4.1 "}, nil, nil},
		{"case differs", []string{"GPT-4.1 (Copilot)", "Gpt-4.1"}, nil, nil},
		{"no exact match", []string{"GPT-4"}, nil, []string{`model "GPT-4" is not offered`, `"GPT-4.1 (copilot)" (id gpt-4.1)`}},
		{"list with none", []string{"a", "b"}, nil, []string{`none of the models "a", "b"`}},
		{"ambiguous id", []string{"gpt-4.1"}, []EditorModelInfo{gpt41, local}, []string{"matches 2 models", `"GPT-4.1 (ollama)"`}},
		{"ambiguous name across id and name", []string{"Claude Sonnet 4.6"}, []EditorModelInfo{sonnet, other}, []string{"matches 2 models"}},
		{"nothing offered", []string{"gpt-4.1"}, []EditorModelInfo{}, []string{"offers no chat model"}},
		{"empty list", nil, nil, []string{"no model is named"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			offered := c.offered
			if offered == nil {
				offered = []EditorModelInfo{gpt41, sonnet}
			}
			if c.want == nil {
				// Exact matches only: a reference with a trailing space is
				// not the id.
				offered = []EditorModelInfo{gpt41}
			}
			_, err := ResolveEditorModel(c.refs, offered)
			var re *ResolveError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a *ResolveError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// scriptedHost answers Send with a scripted reply and records each call.
type scriptedHost struct {
	mu      sync.Mutex
	sends   []EditorSendParams
	reply   func(p EditorSendParams) (EditorSendResult, error)
	invokes []EditorInvokeToolParams
	invoke  func(ctx context.Context, p EditorInvokeToolParams) (EditorInvokeToolResult, error)
}

func (h *scriptedHost) Tools(context.Context) ([]EditorToolInfo, error) {
	return []EditorToolInfo{echoTool}, nil
}

func (h *scriptedHost) InvokeTool(ctx context.Context, p EditorInvokeToolParams) (EditorInvokeToolResult, error) {
	h.mu.Lock()
	h.invokes = append(h.invokes, p)
	h.mu.Unlock()
	return h.invoke(ctx, p)
}

func (h *scriptedHost) Models(context.Context) ([]EditorModelInfo, error) {
	return []EditorModelInfo{gpt41, sonnet}, nil
}

func (h *scriptedHost) Send(ctx context.Context, p EditorSendParams) (EditorSendResult, error) {
	h.mu.Lock()
	h.sends = append(h.sends, p)
	h.mu.Unlock()
	return h.reply(p)
}

func (h *scriptedHost) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sends)
}

func answer(text string) func(EditorSendParams) (EditorSendResult, error) {
	return func(p EditorSendParams) (EditorSendResult, error) {
		return EditorSendResult{Model: p.Model, Text: text}, nil
	}
}

func TestEditorModelComplete(t *testing.T) {
	h := &scriptedHost{reply: answer("Release notes: ok")}
	m := NewEditorSession(h).Model(gpt41)
	if got := m.Identity(); got != (Identity{Route: Editor, Model: "copilot/gpt-4.1"}) {
		t.Fatalf("identity = %+v", got)
	}
	c, err := m.Complete(context.Background(), ChatRequest("copilot/gpt-4.1", "sys", "in"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Text != "Release notes: ok" || c.Model != "copilot/gpt-4.1" || c.FinishReason != "stop" {
		t.Fatalf("completion = %+v", c)
	}
	p := h.sends[0]
	if p.Handle != "1/0" || p.Model != gpt41.Identity() || len(p.Messages) != 2 || p.Messages[0].Role != "system" || p.Messages[1].Content != "in" {
		t.Fatalf("send params = %+v", p)
	}
	if p.Tools == nil || len(p.Tools) != 0 || p.MaxReplyBytes != MaxEditorReplyBytes {
		t.Fatalf("tool-free send must offer an empty tool list and the cap: %+v", p)
	}
}

func TestEditorModelRefusesAndStops(t *testing.T) {
	const marker = "SECRET-ANSWER-MARKER"
	otherModel := gpt41.Identity()
	otherModel.Version = "2024-01-01"
	cases := []struct {
		name  string
		reply func(EditorSendParams) (EditorSendResult, error)
		want  EditorClass
	}{
		{"another model", func(EditorSendParams) (EditorSendResult, error) {
			return EditorSendResult{Model: otherModel, Text: marker}, nil
		}, EditorModelMismatch},
		{"tool call", func(p EditorSendParams) (EditorSendResult, error) {
			return EditorSendResult{Model: p.Model, Text: marker, ToolCalls: []EditorToolCall{{CallID: "c1", Name: "x"}}}, nil
		}, EditorToolCallClass},
		{"empty", answer(" \n\t"), EditorEmpty},
		{"oversized", answer(strings.Repeat("a", MaxEditorReplyBytes+1)), EditorOversized},
		{"invalid utf-8", answer("\xff" + marker), EditorMalformed},
		{"provider refuses", func(EditorSendParams) (EditorSendResult, error) {
			return EditorSendResult{}, &EditorError{Class: EditorBlocked}
		}, EditorBlocked},
		{"host broken", func(EditorSendParams) (EditorSendResult, error) {
			return EditorSendResult{}, errors.New("jsonrpc: " + marker)
		}, EditorMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &scriptedHost{reply: c.reply}
			s := NewEditorSession(h)
			m := s.Model(gpt41)
			_, err := m.Complete(context.Background(), ChatRequest("copilot/gpt-4.1", "sys", "in"))
			var ee *EditorError
			if !errors.As(err, &ee) || ee.Class != c.want {
				t.Fatalf("err = %v, want class %s", err, c.want)
			}
			if strings.Contains(err.Error(), marker) {
				t.Fatalf("error text %q quotes the reply", err)
			}
			// No retry, no fallback: a later send of the same invocation,
			// on this model or another, is refused unsent.
			_, err = s.Model(sonnet).Complete(context.Background(), ChatRequest("copilot/claude-sonnet-4.6", "sys", "in"))
			if !errors.As(err, &ee) || ee.Class != EditorStopped {
				t.Fatalf("later send: err = %v, want stopped", err)
			}
			if h.count() != 1 {
				t.Fatalf("host saw %d sends, want 1", h.count())
			}
		})
	}
}

func TestEditorModelCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := &scriptedHost{reply: func(EditorSendParams) (EditorSendResult, error) {
		cancel()
		return EditorSendResult{}, context.Canceled
	}}
	s := NewEditorSession(h)
	_, err := s.Model(gpt41).Complete(ctx, ChatRequest("copilot/gpt-4.1", "sys", "in"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want it to wrap context.Canceled", err)
	}
	_, err = s.Model(gpt41).Complete(context.Background(), ChatRequest("copilot/gpt-4.1", "sys", "in"))
	var ee *EditorError
	if !errors.As(err, &ee) || ee.Class != EditorStopped || h.count() != 1 {
		t.Fatalf("after cancel: err = %v, sends = %d", err, h.count())
	}
}

func TestEditorModelRefusesOtherRequestedModel(t *testing.T) {
	h := &scriptedHost{reply: answer("x")}
	_, err := NewEditorSession(h).Model(gpt41).Complete(context.Background(), ChatRequest("copilot/claude-sonnet-4.6", "sys", "in"))
	var ee *EditorError
	if !errors.As(err, &ee) || ee.Class != EditorModelMismatch || h.count() != 0 {
		t.Fatalf("err = %v, sends = %d", err, h.count())
	}
}
