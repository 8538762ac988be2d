package route

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestFakeDirectives(t *testing.T) {
	tests := []struct {
		name         string
		instructions string
		input        string
		want         string
		wantTool     string // non-empty: expect *UnboundToolError naming it
	}{
		{"exact", "Reply with exactly `hello`.", "ignored", "hello", ""},
		{"exact with spaces and punctuation", "Be brief.\nReply with exactly `Hi, there! (ok?) 1.2`.\nThanks.", "x", "Hi, there! (ok?) 1.2", ""},
		{"exact needs period right after backtick", "Reply with exactly `hello` .", "in", FakeGuidance, ""},
		{"exact without period is no directive", "Reply with exactly `hello`", "in", FakeGuidance, ""},
		{"empty quote is no directive", "Reply with exactly ``.", "in", FakeGuidance, ""},
		{"quote cannot span lines", "Reply with exactly `a\nb`.", "in", FakeGuidance, ""},
		{"case-sensitive", "reply with exactly `hello`.", "in", FakeGuidance, ""},
		{"followed by input", "Reply with exactly `Echo:` followed by the input.", "some input", "Echo: some input", ""},
		{"followed by empty input keeps the space", "Reply with exactly `Echo:` followed by the input", "", "Echo: ", ""},
		{"followed by multi-line input", "Reply with exactly `A` followed by the input", "l1\nl2", "A l1\nl2", ""},
		{"row 1 wins over row 2 in table order", "Reply with exactly `B` followed by the input\nReply with exactly `A`.", "in", "A", ""},
		{"row 1 wins over row 3", "Call the tool `t`\nReply with exactly `A`.", "in", "A", ""},
		{"row 2 wins over row 3", "Call the tool `t`\nReply with exactly `A` followed by the input", "in", "A in", ""},
		{"first occurrence of a row wins", "Reply with exactly `one`.\nReply with exactly `two`.", "in", "one", ""},
		{"tool call refused", "Call the tool `github_list_merged_prs` now.", "in", "", "github_list_merged_prs"},
		{"no directive", "You are a helpful agent.", "hello", FakeGuidance, ""},
		{"empty instructions", "", "hello", FakeGuidance, ""},
	}
	m := NewFake()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.Complete(context.Background(), ChatRequest("fake", tc.instructions, tc.input))
			if tc.wantTool != "" {
				var ute *UnboundToolError
				if !errors.As(err, &ute) {
					t.Fatalf("err = %v, want *UnboundToolError", err)
				}
				if ute.Tool != tc.wantTool {
					t.Fatalf("tool = %q, want %q", ute.Tool, tc.wantTool)
				}
				return
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := Completion{Model: "fake", Text: tc.want, FinishReason: "stop"}
			u := FakeUsage(ChatRequest("fake", tc.instructions, tc.input), want)
			want.Usage = &u
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Complete = %+v, want %+v", got, want)
			}
		})
	}
}

// Editing the instructions must change the answer: the fake cannot pass every
// check regardless of what the author wrote.
func TestFakeAnswerFollowsInstructionEdits(t *testing.T) {
	m := NewFake()
	before, err := m.Complete(context.Background(), ChatRequest("fake", "Reply with exactly `alpha`.", "q"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := m.Complete(context.Background(), ChatRequest("fake", "Reply with exactly `beta`.", "q"))
	if err != nil {
		t.Fatal(err)
	}
	if before.Text == after.Text {
		t.Fatalf("answer did not change after editing the instructions: %q", before.Text)
	}
	if before.Text != "alpha" || after.Text != "beta" {
		t.Fatalf("answers = %q, %q; want alpha, beta", before.Text, after.Text)
	}
}

func TestFakeDeterministic(t *testing.T) {
	m := NewFake()
	req := ChatRequest("fake", "Reply with exactly `X` followed by the input", "in")
	first, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		got, err := m.Complete(context.Background(), req)
		if err != nil || !reflect.DeepEqual(got, first) {
			t.Fatalf("call %d = %+v, %v; want %+v", i, got, err, first)
		}
	}
}

func TestFakeHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewFake().Complete(ctx, ChatRequest("fake", "Reply with exactly `a`.", "b"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestFakeIdentity(t *testing.T) {
	if got, want := NewFake().Identity(), (Identity{Route: "fake", Model: "fake"}); got != want {
		t.Fatalf("Identity = %+v, want %+v", got, want)
	}
}

func TestUnboundToolErrorText(t *testing.T) {
	err := error(&UnboundToolError{Tool: "lookup"})
	want := `the fake model was asked to call tool "lookup", but no tool host is bound; ` +
		"bind the tool, or remove the Call the tool directive from the instructions"
	if err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
}

// TestFakeTurnNumberCountsTheHistory: the conversation directive answers
// with the number of user messages the request carries, so a turn shows it
// received its history; another directive still wins.
func TestFakeTurnNumberCountsTheHistory(t *testing.T) {
	ctx := context.Background()
	hist := []Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "Turn 1: a"}}
	c, err := NewFake().Complete(ctx, ChatRequestWithHistory(Fake, "Reply with the turn number", hist, "b"))
	if err != nil || c.Text != "Turn 2: b" {
		t.Fatalf("answer = %q, %v; want Turn 2: b", c.Text, err)
	}
	c, err = NewFake().Complete(ctx, ChatRequest(Fake, "Reply with the turn number", "a"))
	if err != nil || c.Text != "Turn 1: a" {
		t.Fatalf("answer = %q, %v; want Turn 1: a", c.Text, err)
	}
	c, err = NewFake().Complete(ctx, ChatRequestWithHistory(Fake, "Reply with exactly `X`.\nReply with the turn number", hist, "b"))
	if err != nil || c.Text != "X" {
		t.Fatalf("answer = %q, %v; want the first row to win", c.Text, err)
	}
}

// Row 4 reads, then edits, then answers with the edit's result, each step
// decided by the results the request carries; without both tools offered
// it refuses.
func TestFakeEditDirectiveReadsThenEdits(t *testing.T) {
	m := NewFake()
	instr := "Fix it.\n" + FakeEditDirective("return a - b", "return a + b", "calc/add.go")
	tools := []ToolDef{{Name: FakeReadFunction}, {Name: FakeEditFunction}}
	req := ChatRequest("fake", instr, "fix Add")
	req.Tools = tools
	c, err := m.Complete(context.Background(), req)
	if err != nil || len(c.ToolCalls) != 1 || c.ToolCalls[0].Name != FakeReadFunction ||
		c.ToolCalls[0].Arguments != `{"endLine":100000,"filePath":"calc/add.go","startLine":1}` {
		t.Fatalf("send 1: %+v, %v", c, err)
	}
	req.Messages = append(req.Messages, Message{Role: "assistant", ToolCalls: c.ToolCalls},
		Message{Role: "tool", ToolCallID: c.ToolCalls[0].ID, Content: "func Add(a, b int) int {\n\treturn a - b\n}\n"})
	c, err = m.Complete(context.Background(), req)
	if err != nil || len(c.ToolCalls) != 1 || c.ToolCalls[0].Name != FakeEditFunction ||
		c.ToolCalls[0].Arguments != `{"filePath":"calc/add.go","newString":"return a + b","oldString":"return a - b"}` {
		t.Fatalf("send 2: %+v, %v", c, err)
	}
	req.Messages = append(req.Messages, Message{Role: "assistant", ToolCalls: c.ToolCalls},
		Message{Role: "tool", ToolCallID: c.ToolCalls[0].ID, Content: "Edited calc/add.go."})
	c, err = m.Complete(context.Background(), req)
	if err != nil || len(c.ToolCalls) != 0 || c.Text != "Edited calc/add.go." {
		t.Fatalf("send 3: %+v, %v", c, err)
	}
	// The read shows no such text: it says so and stops.
	req2 := ChatRequest("fake", instr, "fix Add")
	req2.Tools = tools
	req2.Messages = append(req2.Messages, Message{Role: "tool", Content: "package calc\n"})
	if c, err := m.Complete(context.Background(), req2); err != nil || len(c.ToolCalls) != 0 || !strings.Contains(c.Text, "does not hold") {
		t.Fatalf("no such text: %+v, %v", c, err)
	}
	// Without both tools offered: refused, never answered.
	req3 := ChatRequest("fake", instr, "fix Add")
	req3.Tools = tools[:1]
	var we *WorkspaceEditError
	if _, err := m.Complete(context.Background(), req3); !errors.As(err, &we) || we.Path != "calc/add.go" {
		t.Fatalf("one tool offered: %v", err)
	}
	if _, err := m.Complete(context.Background(), ChatRequest("fake", instr, "x")); !errors.As(err, &we) {
		t.Fatalf("tool-free: %v", err)
	}
	// Rows 1 to 3 win over row 4.
	if c, err := m.Complete(context.Background(), ChatRequest("fake", instr+"\nReply with exactly `A`.", "x")); err != nil || c.Text != "A" {
		t.Fatalf("row 1: %+v, %v", c, err)
	}
}

// TestFakeEditDirectiveInTheInput: instructions with no directive and an
// input with the Replace directive, on the workspace tools, make that
// input's edit (so a conversation's turns can make different edits); the
// instructions' own directive wins; without both tools offered the input's
// directive is not acted on (the placeholder answer, never a refusal).
func TestFakeEditDirectiveInTheInput(t *testing.T) {
	m := NewFake()
	tools := []ToolDef{{Name: FakeReadFunction}, {Name: FakeEditFunction}}
	input := FakeEditDirective("return a + b", "return b + a", "calc/add.go")
	req := ChatRequestWithHistory("fake", "You fix bugs.", []Message{{Role: "user", Content: FakeEditDirective("x", "y", "other.go")}, {Role: "assistant", Content: "Edited other.go."}}, input)
	req.Tools = tools
	c, err := m.Complete(context.Background(), req)
	if err != nil || len(c.ToolCalls) != 1 || c.ToolCalls[0].Arguments != `{"endLine":100000,"filePath":"calc/add.go","startLine":1}` {
		t.Fatalf("send 1: %+v, %v", c, err)
	}
	req.Messages = append(req.Messages, Message{Role: "assistant", ToolCalls: c.ToolCalls},
		Message{Role: "tool", ToolCallID: c.ToolCalls[0].ID, Content: "\treturn a + b\n"})
	c, err = m.Complete(context.Background(), req)
	if err != nil || len(c.ToolCalls) != 1 || c.ToolCalls[0].Arguments != `{"filePath":"calc/add.go","newString":"return b + a","oldString":"return a + b"}` {
		t.Fatalf("send 2: %+v, %v", c, err)
	}
	instr := "You fix bugs.\n" + FakeEditDirective("return a - b", "return a + b", "calc/add.go")
	req = ChatRequest("fake", instr, input)
	req.Tools = tools
	req.Messages = append(req.Messages, Message{Role: "tool", Content: "\treturn a - b\n"})
	if c, err := m.Complete(context.Background(), req); err != nil || len(c.ToolCalls) != 1 || !strings.Contains(c.ToolCalls[0].Arguments, `"oldString":"return a - b"`) {
		t.Fatalf("the instructions' directive: %+v, %v", c, err)
	}
	if c, err := m.Complete(context.Background(), ChatRequest("fake", "You fix bugs.", input)); err != nil || c.Text != FakeGuidance {
		t.Fatalf("no tools offered: %+v, %v", c, err)
	}
}

// TestFakeUsageCountsBytes: the fake model's usage is one token per four
// bytes (rounded up) of every message, the same for the same request.
func TestFakeUsageCountsBytes(t *testing.T) {
	req := ChatRequestWithHistory("fake", "Reply with exactly `ok`.", []Message{{Role: "user", Content: "12345"}, {Role: "assistant", Content: "ok"}}, "1234")
	got, err := NewFake().Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	// 24 bytes of instructions: 6; "12345": 2; "ok": 1; "1234": 1. Answer "ok": 1.
	if want := (Usage{PromptTokens: 10, CompletionTokens: 1, TotalTokens: 11}); got.Usage == nil || *got.Usage != want {
		t.Fatalf("usage = %+v, want %+v", got.Usage, want)
	}
}
