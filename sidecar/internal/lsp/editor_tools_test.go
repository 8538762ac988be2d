package lsp_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// Editor tools end to end through a real jsonrpc2 client over net.Pipe:
// declared names bind to the tools the scripted vscode.lm.tools offers,
// and calls go through kmx/languageModel/invokeTool.

const editorTooled = "---\n" +
	"name: notes\n" +
	"model: GPT-4.1\n" +
	"tools: [echo]\n" +
	"---\n" +
	"You draft release notes. Call echo first.\n" +
	"\n" +
	"## Examples\n" +
	"\n" +
	"```yaml\n" +
	"- id: first\n" +
	"  input: Ada\n" +
	"  assert:\n" +
	"    - toolCalled: echo\n" +
	"    - contains: \"Release notes: Ada\"\n" +
	"- id: second\n" +
	"  input: Grace\n" +
	"  assert:\n" +
	"    - toolCalled: echo\n" +
	"```\n"

var editorEcho = route.EditorToolInfo{Name: "echo", Description: "Echoes its text argument back.",
	InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}}}

// toolThenText answers send 1 with one echo call of the example's input
// and send 2 with "Release notes: " + the tool's result.
func toolThenText(_ context.Context, _ int, p route.EditorSendParams) (any, error) {
	last := p.Messages[len(p.Messages)-1]
	if last.Role == "tool" {
		return route.EditorSendResult{Model: p.Model, Text: "Release notes: " + last.Content}, nil
	}
	return route.EditorSendResult{Model: p.Model, ToolCalls: []route.EditorToolCall{{CallID: "call-" + last.Content, Name: "echo", Input: map[string]any{"text": last.Content}}}}, nil
}

func TestEditorToolsCallThroughInvokeToolAndReplayWithZeroCalls(t *testing.T) {
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}, tools: []route.EditorToolInfo{{Name: "Echo"}, editorEcho, {Name: "search"}}, reply: toolThenText}
	c := startEditor(t, e)
	path := writeAgent(t, "notes.agent.md", editorTooled)
	rep := testFile(t, c, path, editorTooled)
	if rep.Verdict != "pass" || verdicts(rep) != "first=pass,second=pass" {
		t.Fatalf("verdict %s: %+v", rep.Verdict, rep.Examples)
	}
	ex := rep.Examples[0]
	if ex.ToolCalls != 1 || len(ex.ToolSources) != 1 || ex.ToolSources[0].Name != "echo" || ex.ToolSources[0].Source != localtools.SourceLive {
		t.Fatalf("example tool use = %d %+v, want one live call", ex.ToolCalls, ex.ToolSources)
	}
	e.mu.Lock()
	toolLists, invokes, sends := e.toolLists, append([]route.EditorInvokeToolParams(nil), e.invokes...), append([]route.EditorSendParams(nil), e.sends...)
	e.mu.Unlock()
	// The tools were listed once per invocation and the binding frozen:
	// each call carries exactly the tool VS Code offered under that name.
	if toolLists != 1 || len(invokes) != 2 || len(sends) != 4 {
		t.Fatalf("tool lists %d invokes %d sends %d, want 1, 2, 4", toolLists, len(invokes), len(sends))
	}
	for _, p := range invokes {
		if !reflect.DeepEqual(p.Tool, editorEcho) || p.MaxResultBytes != route.MaxEditorToolResultBytes {
			t.Fatalf("invoke = %+v", p)
		}
	}
	if invokes[0].Input["text"] != "Ada" {
		t.Fatalf("invoke input = %+v", invokes[0].Input)
	}
	// The model was offered the tool as VS Code describes it, and the
	// second send carries the call and its result.
	first := sends[0]
	if len(first.Tools) != 1 || first.Tools[0].Name != "echo" || first.Tools[0].Description != editorEcho.Description || !reflect.DeepEqual(first.Tools[0].InputSchema, editorEcho.InputSchema) {
		t.Fatalf("offered tools = %+v", first.Tools)
	}
	second := sends[1]
	n := len(second.Messages)
	if n != 4 || second.Messages[2].Role != "assistant" || len(second.Messages[2].ToolCalls) != 1 || second.Messages[2].ToolCalls[0].Arguments != `{"text":"Ada"}` ||
		second.Messages[3].Role != "tool" || second.Messages[3].ToolCallID != "call-Ada" || second.Messages[3].Content != "Ada" {
		t.Fatalf("second send messages = %+v", second.Messages)
	}

	// The journal holds the call and its live result; replay rebuilds the
	// run from it with zero model calls and zero tool calls.
	var ins lsp.InspectResult
	c.mustCall(lsp.MethodInspect, lsp.InspectParams{RunID: rep.RunID}, &ins)
	if ins.Inspection == nil || ins.Inspection.LiveCalls != 0 || len(ins.Inspection.Turns) != 2 {
		t.Fatalf("inspection = %+v", ins.Inspection)
	}
	turn := ins.Inspection.Turns[0]
	if turn.State != "verified" || turn.Harness != "kmx-local-tools-v1" || len(turn.ToolCalls) != 1 || turn.ToolCalls[0].Source != localtools.SourceLive ||
		turn.ToolCalls[0].Result == nil || *turn.ToolCalls[0].Result != "Ada" || len(turn.Tools) != 1 || turn.Tools[0].Source != localtools.SourceLive {
		t.Fatalf("replayed turn = %+v", turn)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.sends) != 4 || len(e.invokes) != 2 {
		t.Fatalf("replay reached the editor: sends %d invokes %d", len(e.sends), len(e.invokes))
	}
}

func TestEditorToolsBindingRefusesBeforeAnyJournal(t *testing.T) {
	cases := []struct {
		name  string
		tools []route.EditorToolInfo
		want  []string
	}{
		{"offered twice", []route.EditorToolInfo{editorEcho, {Name: "echo", Description: "another"}}, []string{`"echo" matches 2 tools`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}, tools: tc.tools, reply: toolThenText}
			c := startEditor(t, e)
			path := writeAgent(t, "notes.agent.md", editorTooled)
			rep := testFile(t, c, path, editorTooled)
			if rep.Verdict != "refused" || rep.Refusal == nil || rep.RunID != "" {
				t.Fatalf("verdict %s refusal %+v run %q", rep.Verdict, rep.Refusal, rep.RunID)
			}
			text := rep.Refusal.Message + " / " + rep.Refusal.Next
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("refusal %q does not contain %q", text, w)
				}
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if len(e.sends) != 0 || len(e.invokes) != 0 {
				t.Fatalf("a refused binding sent %d requests and %d tool calls", len(e.sends), len(e.invokes))
			}
		})
	}
}

// TestEditorToolNotOfferedIsAStub: a declared tool VS Code offers nothing
// for (only "Echo" and "search": exact names) is not refused: its call
// answers "not available in this test" (source unavailable), nothing is
// invoked, and the run replays with zero calls.
func TestEditorToolNotOfferedIsAStub(t *testing.T) {
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}, tools: []route.EditorToolInfo{{Name: "Echo"}, {Name: "search"}}, reply: toolThenText}
	c := startEditor(t, e)
	path := writeAgent(t, "notes.agent.md", editorTooled)
	rep := testFile(t, c, path, editorTooled)
	if rep.Refusal != nil || verdicts(rep) != "first=fail,second=pass" {
		t.Fatalf("verdict %s refusal %+v: %+v", rep.Verdict, rep.Refusal, rep.Examples)
	}
	ex := rep.Examples[0]
	if ex.ToolCalls != 1 || len(ex.ToolSources) != 1 || ex.ToolSources[0] != (runner.ToolSource{Name: "echo", Source: localtools.SourceUnavailable}) {
		t.Fatalf("example tool use = %d %+v, want one stubbed call", ex.ToolCalls, ex.ToolSources)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.invokes) != 0 || e.sends[1].Messages[3].Content != localtools.UnavailableText {
		t.Fatalf("invokes %d, the model got %q", len(e.invokes), e.sends[1].Messages[3].Content)
	}
}

// A real-format agent declaring the set `search` and `edit/editFiles`: each
// reference binds to the vscode.lm.tools entry VS Code itself uses for it,
// found by the id VS Code registers (vscode.lm.tools names tools by id,
// never by the reference name the file writes). VS Code offers
// copilot_searchCodebase, so search/codebase is called through invokeTool;
// it offers no file-editing tool, so edit/editFiles answers the stub. The
// model is offered every tool under its function name, the bound one with
// VS Code's own definition.
const editorReferences = "---\n" +
	"name: reviewer\n" +
	"model: GPT-4.1\n" +
	"tools: ['search', 'edit/editFiles']\n" +
	"---\n" +
	"You review changes and fix typos.\n" +
	"\n" +
	"## Examples\n" +
	"\n" +
	"```yaml\n" +
	"- id: typo\n" +
	"  input: Ada\n" +
	"  assert:\n" +
	"    - toolCalled: search/codebase\n" +
	"    - toolCalled: search\n" +
	"    - toolCalled: edit\n" +
	"    - toolNotCalled: search/usages\n" +
	"```\n"

func TestEditorToolsBindByReference(t *testing.T) {
	codebase := route.EditorToolInfo{Name: "copilot_searchCodebase", Description: "Search the codebase.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}}}
	reply := func(_ context.Context, _ int, p route.EditorSendParams) (any, error) {
		last := p.Messages[len(p.Messages)-1]
		if last.Role == "tool" {
			prev := p.Messages[len(p.Messages)-2]
			return route.EditorSendResult{Model: p.Model, Text: "found: " + prev.Content + " / edit: " + last.Content}, nil
		}
		return route.EditorSendResult{Model: p.Model, ToolCalls: []route.EditorToolCall{
			{CallID: "c1", Name: "search_codebase", Input: map[string]any{"text": last.Content}},
			{CallID: "c2", Name: "edit_editFiles", Input: map[string]any{"filePath": "/a", "oldString": "x", "newString": "y"}},
		}}, nil
	}
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}, tools: []route.EditorToolInfo{codebase, editorEcho, {Name: "codebase"}}, reply: reply}
	c := startEditor(t, e)
	path := writeAgent(t, "reviewer.agent.md", editorReferences)
	rep := testFile(t, c, path, editorReferences)
	if rep.Verdict != "pass" {
		t.Fatalf("verdict %s refusal %+v: %+v", rep.Verdict, rep.Refusal, rep.Examples)
	}
	want := []runner.ToolSource{{Name: "search/codebase", Source: localtools.SourceLive}, {Name: "edit/editFiles", Source: localtools.SourceUnavailable}}
	if ex := rep.Examples[0]; ex.ToolCalls != 2 || !reflect.DeepEqual(ex.ToolSources, want) {
		t.Fatalf("tool use = %d %+v, want %+v", ex.ToolCalls, ex.ToolSources, want)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.invokes) != 1 || !reflect.DeepEqual(e.invokes[0].Tool, codebase) || e.invokes[0].Input["text"] != "Ada" {
		t.Fatalf("invokes = %+v", e.invokes)
	}
	offered := map[string]route.EditorToolDefinition{}
	for _, d := range e.sends[0].Tools {
		offered[d.Name] = d
	}
	if len(offered) != 8 || offered["search_codebase"].Description != codebase.Description || !strings.Contains(offered["edit_editFiles"].Description, "replace") {
		t.Fatalf("offered = %+v", e.sends[0].Tools)
	}
	if got := e.sends[1].Messages[4].Content; got != localtools.UnavailableText {
		t.Fatalf("the stubbed call got %q", got)
	}
}

func TestEditorToolsDisabledWins(t *testing.T) {
	// VS Code offers no echo at all: Disabled needs no binding, lists no
	// tools, calls nothing and answers the fixed text.
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}, reply: toolThenText}
	c := startEditor(t, e)
	path := writeAgent(t, "notes.agent.md", editorTooled)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "kmx.yaml"), []byte("tools:\n  echo: Disabled\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := testFile(t, c, path, editorTooled)
	if rep.Refusal != nil || len(rep.Examples) != 2 {
		t.Fatalf("report = %+v", rep)
	}
	if rep.Examples[0].Verdict != "fail" || rep.Examples[0].ToolCalls != 0 {
		t.Fatalf("first = %+v, want fail (a Disabled answer is not a call)", rep.Examples[0])
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.toolLists != 0 || len(e.invokes) != 0 {
		t.Fatalf("tool lists %d invokes %d, want none", e.toolLists, len(e.invokes))
	}
	if got := e.sends[1].Messages[3].Content; got != localtools.DisabledText {
		t.Fatalf("the model got %q for the Disabled call", got)
	}
}

func TestEditorToolFailureIsNotRetried(t *testing.T) {
	cases := []struct {
		name  string
		class route.EditorClass
		want  string
	}{
		{"tool throws", route.EditorToolFailed, "the tool failed in VS Code"},
		{"changed since binding", route.EditorToolUnavailable, "no longer offers exactly the tool bound"},
		{"confirmation declined", route.EditorToolDeclined, "declined in VS Code's confirmation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}, tools: []route.EditorToolInfo{editorEcho}, reply: toolThenText}
			e.invoke = func(context.Context, int, route.EditorInvokeToolParams) (any, error) {
				return nil, editorError(tc.class)
			}
			c := startEditor(t, e)
			path := writeAgent(t, "notes.agent.md", editorTooled)
			rep := testFile(t, c, path, editorTooled)
			if rep.Examples[0].Verdict != "unknown" || !strings.Contains(rep.Examples[0].Message, tc.want) || strings.Contains(rep.Examples[0].Message, "SECRET") {
				t.Fatalf("first = %+v", rep.Examples[0])
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			// The call was made once, its example never made its second
			// send, and (as after any failed execution) later examples
			// were not sent.
			if len(e.invokes) != 1 || len(e.sends) != 1 || !strings.HasPrefix(rep.Examples[1].Message, "not sent") {
				t.Fatalf("invokes %d sends %d, want 1 and 1; second %+v", len(e.invokes), len(e.sends), rep.Examples[1])
			}
		})
	}
}

func TestEditorToolCancelReachesTheExtension(t *testing.T) {
	inCall := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}, tools: []route.EditorToolInfo{editorEcho}, reply: toolThenText}
	e.invoke = func(context.Context, int, route.EditorInvokeToolParams) (any, error) {
		inCall <- struct{}{}
		<-release
		return nil, editorError(route.EditorCancelled)
	}
	c := startEditor(t, e)
	cancelInFlight(t, c, e, editorTooled, inCall, "the tool was never called", &e.lastInvokeID)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.sends) != 1 || len(e.invokes) != 1 {
		t.Fatalf("sends %d invokes %d, want 1 and 1", len(e.sends), len(e.invokes))
	}
}
