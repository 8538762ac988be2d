package route

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/vscodetools"
)

// The fake model's directives, in table order (first matching row wins).
// A quoted TEXT or NAME is one or more characters between backticks on a
// single line: spaces and punctuation are fine, a backtick or a line break
// ends it. Matching is case-sensitive and may start anywhere in the
// instructions; when a row matches more than once, its first occurrence wins.
var (
	// Row 1: the period must follow the closing backtick directly, so the
	// row 2 wording never matches row 1.
	fakeReplyExactly = regexp.MustCompile("Reply with exactly `([^`\n]+)`\\.")
	// Row 2: the answer is TEXT, one space, then the user's input verbatim.
	fakeReplyFollowed = regexp.MustCompile("Reply with exactly `([^`\n]+)` followed by the input")
	// Row 3: a tool call, made only when the request offers the tool;
	// otherwise refused.
	fakeCallTool = regexp.MustCompile("Call the tool `([^`\n]+)`")
	// Row 4 (issue 27): read a workspace file, then replace one text in
	// it, through VS Code's read/readFile and edit/editFiles. With no
	// directive in the instructions, a turn's input holding it on the
	// workspace tools does the same (a conversation's turns, each its edit).
	fakeReplaceIn = regexp.MustCompile("Replace `([^`\n]+)` with `([^`\n]+)` in `([^`\n]+)`")
)

// Function names the workspace directive calls: VS Code's read/readFile and
// edit/editFiles as offered (vscodetools' function names).
const (
	FakeReadFunction = "read_readFile"
	FakeEditFunction = "edit_editFiles"
)

// FakeEditDirective is the row-4 directive, as an author writes it: read
// path, then replace old with repl in it.
func FakeEditDirective(old, repl, path string) string {
	return "Replace `" + old + "` with `" + repl + "` in `" + path + "`"
}

// WorkspaceEditError is the fake model's refusal when the instructions ask
// it to edit a workspace file but the request does not offer both the read
// and the edit tool: the example is refused rather than answered.
type WorkspaceEditError struct {
	Path string
}

func (e *WorkspaceEditError) Error() string {
	return fmt.Sprintf("the fake model was asked to edit %q, but the request does not offer %s and %s; "+
		"declare read/readFile and edit/editFiles and give the example a workspace, or remove the Replace directive", e.Path, FakeReadFunction, FakeEditFunction)
}

// FakeToolDirective is the row-3 directive to call tool, as an author
// writes it in the instructions.
func FakeToolDirective(tool string) string { return "Call the tool `" + tool + "`" }

// FakeTurnNumber is the fake model's conversation directive (row 4, after
// the seed's three rows): the answer is "Turn N: " and the input, where N
// counts the user messages the request carries (the history's and this
// one). It shows that a conversation turn received its history.
const FakeTurnNumber = "Reply with the turn number"

// FakeGuidance is the fake model's answer when the instructions hold no
// directive. It names the directive so the author knows how to steer it.
const FakeGuidance = "kmx fake model: add the line Reply with exactly `TEXT`. " +
	"to the instructions to choose my answer."

// FakePlaceholderUnknown is why an example whose answer is FakeGuidance is
// unknown: the placeholder is the fake's answer to instructions that hold
// no directive, so any assertion it passes or fails proves nothing about
// the agent. It says how to choose the fake's answer, naming the settings
// of a real model in the words of the front that shows it (the command
// line's: --model NAME --endpoint URL).
func FakePlaceholderUnknown(w problem.Words) string {
	real := w(problem.Model, "NAME") + " " + w(problem.Endpoint, "URL")
	if !problem.CommandLine(w) {
		real = w(problem.Model, "NAME") + " on " + w(problem.Endpoint, "URL")
	}
	return "the fake model's placeholder answer proves nothing (the instructions hold no line it answers): unknown, not a pass; " +
		"to choose the fake's answer, add the line Reply with exactly `TEXT`. to the instructions, or test on a real model (" + real + ")"
}

// UnboundToolError is the fake model's refusal when the instructions ask it
// to call a tool on the tool-free path: only a bound tool host may receive a
// tool call, so the example is refused rather than answered. Tool comes from
// the author's own instructions (never from a reply or a credential).
type UnboundToolError struct {
	Tool string
}

func (e *UnboundToolError) Error() string {
	return fmt.Sprintf("the fake model was asked to call tool %q, but no tool host is bound; "+
		"bind the tool, or remove the Call the tool directive from the instructions", e.Tool)
}

// fakeModel is kmx's deterministic in-memory model. It has no state, so it is
// safe for concurrent use.
type fakeModel struct{}

// NewFake returns the fake model: it answers from the directives in the
// system message alone, with no network, clock or randomness, so the same
// instructions and input always give the same completion.
func NewFake() Model { return fakeModel{} }

func (fakeModel) Identity() Identity { return Identity{Route: Fake, Model: Fake} }

// Complete answers per the directive table. The request's model name is not
// checked: on the fake route every model name is served by the fake. Its
// usage is FakeUsage's deterministic count.
func (f fakeModel) Complete(ctx context.Context, req Request) (Completion, error) {
	c, err := f.complete(ctx, req)
	if err != nil {
		return c, err
	}
	u := FakeUsage(req, c)
	c.Usage = &u
	return c, nil
}

// FakeUsage is the fake model's token count: no tokenizer, one token per
// four bytes (rounded up) of each message's content and tool call
// arguments, the request's as prompt tokens and the completion's as
// completion tokens. It depends on the bytes alone, so a maxTokens budget
// on the fake model passes or fails the same way every time.
func FakeUsage(req Request, c Completion) Usage {
	var u Usage
	for _, m := range req.Messages {
		u.PromptTokens += fakeTokens(m.Content)
		for _, tc := range m.ToolCalls {
			u.PromptTokens += fakeTokens(tc.Arguments)
		}
	}
	u.CompletionTokens = fakeTokens(c.Text)
	for _, tc := range c.ToolCalls {
		u.CompletionTokens += fakeTokens(tc.Arguments)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func fakeTokens(s string) int { return (len(s) + 3) / 4 }

func (fakeModel) complete(ctx context.Context, req Request) (Completion, error) {
	if err := ctx.Err(); err != nil {
		return Completion{}, err
	}
	instructions, input := splitMessages(req.Messages)
	text, err := FakeAnswer(instructions, input)
	var unbound *UnboundToolError
	if errors.As(err, &unbound) {
		if fn, ok := offered(req.Tools, unbound.Tool); ok {
			return fakeToolTurn(req, fn), nil
		}
	}
	var edit *WorkspaceEditError
	if errors.As(err, &edit) && offers(req.Tools, FakeReadFunction) && offers(req.Tools, FakeEditFunction) {
		m := fakeReplaceIn.FindStringSubmatch(instructions)
		return fakeEditTurn(req, m[1], m[2], m[3]), nil
	}
	if err != nil {
		return Completion{}, err
	}
	if m := fakeReplaceIn.FindStringSubmatch(input); m != nil && text == FakeGuidance && offers(req.Tools, FakeReadFunction) && offers(req.Tools, FakeEditFunction) {
		// Instructions with no directive and a turn's input with the
		// Replace directive, on the workspace tools: that turn's edit, so
		// that the turns of a conversation can make different edits.
		return fakeEditTurn(req, m[1], m[2], m[3]), nil
	}
	if text == FakeGuidance && strings.Contains(instructions, FakeTurnNumber) {
		text = fmt.Sprintf("Turn %d: %s", userMessages(req.Messages), input)
	}
	return Completion{Model: Fake, Text: text, FinishReason: "stop"}, nil
}

// FakeCallID is the call ID the fake model gives its one tool call.
const FakeCallID = "call_1"

// fakeToolTurn is the tool row when the request offers NAME: the first send
// requests one call of NAME with arguments {}; once the request carries a
// tool result, the answer is that result's text (a JSON result compacted).
func fakeToolTurn(req Request, name string) Completion {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "tool" {
			return Completion{Model: Fake, Text: compactJSON(m.Content), FinishReason: "stop"}
		}
	}
	return Completion{Model: Fake, FinishReason: "tool_calls",
		ToolCalls: []ToolCall{{ID: FakeCallID, Name: name, Arguments: "{}"}}}
}

// fakeEditTurn is row 4 when the request offers both tools, one step per
// send, each decided by the tool results the request carries: first read
// the file; once its text is back, replace old with repl in it (or, when
// the text does not hold old, say so and stop); once the edit's result is
// back, answer with it. Three sends: it needs a harness with room for a
// loop (kmx-local-tools-v1 refuses the second tool round).
func fakeEditTurn(req Request, old, repl, path string) Completion {
	var results []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	call := func(id, name string, args map[string]any) Completion {
		b, _ := json.Marshal(args)
		return Completion{Model: Fake, FinishReason: "tool_calls",
			ToolCalls: []ToolCall{{ID: id, Name: name, Arguments: string(b)}}}
	}
	switch {
	case len(results) == 0:
		return call("call_read", FakeReadFunction, map[string]any{"filePath": path, "startLine": 1, "endLine": 100000})
	case len(results) == 1 && strings.Contains(results[0], old):
		return call("call_edit", FakeEditFunction, map[string]any{"filePath": path, "oldString": old, "newString": repl})
	case len(results) == 1:
		return Completion{Model: Fake, Text: "kmx fake model: " + path + " does not hold the text to replace.", FinishReason: "stop"}
	}
	return Completion{Model: Fake, Text: results[len(results)-1], FinishReason: "stop"}
}

// offers reports whether a tool is offered under the function name name.
func offers(tools []ToolDef, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// offered is the function name of the offered tool the directive names:
// by its function name, or by a name the agent file writes for it (its
// canonical name or declared reference; the first tool a set name covers).
func offered(tools []ToolDef, name string) (string, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t.Name, true
		}
	}
	for _, t := range tools {
		for _, a := range t.Aliases {
			if a == name {
				return t.Name, true
			}
		}
	}
	for _, t := range tools {
		if len(t.Aliases) > 0 && vscodetools.Covers(name, t.Aliases[0]) {
			return t.Name, true
		}
	}
	return "", false
}

// compactJSON returns s as compact JSON when it is JSON, else s unchanged.
func compactJSON(s string) string {
	var b bytes.Buffer
	if json.Valid([]byte(s)) && json.Compact(&b, []byte(s)) == nil {
		return b.String()
	}
	return s
}

// FakeAnswer is the fake model's directive table as a pure function of the
// instructions and the input. It returns *UnboundToolError for the tool row
// and *WorkspaceEditError for the workspace row (issue 27).
func FakeAnswer(instructions, input string) (string, error) {
	if m := fakeReplyExactly.FindStringSubmatch(instructions); m != nil {
		return m[1], nil
	}
	if m := fakeReplyFollowed.FindStringSubmatch(instructions); m != nil {
		return m[1] + " " + input, nil
	}
	if m := fakeCallTool.FindStringSubmatch(instructions); m != nil {
		return "", &UnboundToolError{Tool: m[1]}
	}
	if m := fakeReplaceIn.FindStringSubmatch(instructions); m != nil {
		return "", &WorkspaceEditError{Path: m[3]}
	}
	return FakeGuidance, nil
}

// userMessages counts the request's user messages.
func userMessages(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == "user" {
			n++
		}
	}
	return n
}

// splitMessages returns the system messages joined by a newline (the
// instructions) and the last user message (the input). A chat turn sends
// exactly one of each; joining keeps any other shape deterministic.
func splitMessages(msgs []Message) (instructions, input string) {
	var system []string
	for _, m := range msgs {
		switch m.Role {
		case "system":
			system = append(system, m.Content)
		case "user":
			input = m.Content
		}
	}
	return strings.Join(system, "\n"), input
}
