package lsp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// The editor route end to end through a real jsonrpc2 client over
// net.Pipe: the client plays the extension's side (vscode.lm), scripted.

const editorAgent = "---\n" +
	"name: notes\n" +
	"model: GPT-4.1\n" +
	"---\n" +
	"You draft release notes.\n" +
	"\n" +
	"## Examples\n" +
	"\n" +
	"```yaml\n" +
	"- id: first\n" +
	"  input: Ada\n" +
	"  assert:\n" +
	"    - contains: \"Release notes:\"\n" +
	"- id: second\n" +
	"  input: Grace\n" +
	"  assert:\n" +
	"    - contains: \"Release notes:\"\n" +
	"```\n"

const editorJudged = "---\n" +
	"name: judged\n" +
	"model: [\"gpt-9\", \"Claude Sonnet 4.6 (copilot)\", \"GPT-4.1\"]\n" +
	"---\n" +
	"You draft release notes.\n" +
	"\n" +
	"## Examples\n" +
	"\n" +
	"```yaml\n" +
	"- id: only\n" +
	"  input: Ada\n" +
	"  assert:\n" +
	"    - llmJudge:\n" +
	"        rubric: The answer starts with `Release notes:`\n" +
	"```\n"

var (
	editorGPT    = route.EditorModelInfo{Handle: "h1", ID: "gpt-4.1", Name: "GPT-4.1", Vendor: "copilot", Family: "gpt-4.1", Version: "2025-04-14", MaxInputTokens: 128000}
	editorSonnet = route.EditorModelInfo{Handle: "h2", ID: "claude-sonnet-4.6", Name: "Claude Sonnet 4.6", Vendor: "copilot", Family: "claude-sonnet", Version: "1"}
)

// scriptedEditor is the extension's side of kmx/languageModel/*.
type scriptedEditor struct {
	models []route.EditorModelInfo
	// reply answers one send; nil answers "Release notes: " + the input.
	reply func(ctx context.Context, n int, p route.EditorSendParams) (any, error)
	// lastID is the JSON-RPC id of the latest send.
	lastID string

	// tools is what vscode.lm.tools offers; invoke answers one
	// invokeTool (nil answers the input's "text").
	tools  []route.EditorToolInfo
	invoke func(ctx context.Context, n int, p route.EditorInvokeToolParams) (any, error)

	mu        sync.Mutex
	lists     int
	sends     []route.EditorSendParams
	toolLists int
	invokes   []route.EditorInvokeToolParams
	// lastInvokeID is the JSON-RPC id of the latest invokeTool.
	lastInvokeID string
}

func (e *scriptedEditor) answer(ctx context.Context, id, method string, raw json.RawMessage) (any, error) {
	switch method {
	case lsp.MethodLanguageModels:
		e.bump(&e.lists)
		return route.EditorModelsResult{Models: e.models}, nil
	case lsp.MethodLanguageModelSend:
		p, n, err := record(e, id, raw, &e.sends, &e.lastID)
		if err != nil {
			return nil, err
		}
		if e.reply != nil {
			return e.reply(ctx, n, p)
		}
		return route.EditorSendResult{Model: p.Model, Text: "Release notes: " + p.Messages[1].Content}, nil
	case lsp.MethodLanguageModelTools:
		e.bump(&e.toolLists)
		return route.EditorToolsResult{Tools: e.tools}, nil
	case lsp.MethodLanguageModelInvokeTool:
		p, n, err := record(e, id, raw, &e.invokes, &e.lastInvokeID)
		if err != nil {
			return nil, err
		}
		if e.invoke != nil {
			return e.invoke(ctx, n, p)
		}
		return route.EditorInvokeToolResult{Text: fmt.Sprint(p.Input["text"])}, nil
	}
	return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "%s", method)
}

// bump counts one list request under e.mu.
func (e *scriptedEditor) bump(n *int) {
	e.mu.Lock()
	*n++
	e.mu.Unlock()
}

// record decodes one request e answers, appends it to log and keeps its
// JSON-RPC id in lastID, under e.mu; n is its number (1 for the first).
func record[P any](e *scriptedEditor, id string, raw json.RawMessage, log *[]P, lastID *string) (p P, n int, err error) {
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	*log = append(*log, p)
	*lastID = id
	return p, len(*log), nil
}

func (e *scriptedEditor) counts() (lists, sends int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lists, len(e.sends)
}

func editorError(class route.EditorClass) error {
	data := json.RawMessage(`{"class":"` + string(class) + `"}`)
	return &jsonrpc2.Error{Code: lsp.LanguageModelErrorCode, Message: "provider said SECRET-PROVIDER-TEXT", Data: &data}
}

// startEditor starts a server whose client serves the editor route.
func startEditor(t *testing.T, e *scriptedEditor) *client {
	t.Helper()
	c := startServer(t, lsp.Options{Version: "test"})
	c.mu.Lock()
	c.answer = e.answer
	c.mu.Unlock()
	// One example at a time: these tests script replies and check which
	// examples were sent after a refused one.
	c.initialize(map[string]any{"protocolVersion": lsp.ProtocolVersion, "settings": map[string]any{"concurrency": 1}, "languageModels": true})
	return c
}

func testFile(t *testing.T, c *client, path, text string) *runner.Report {
	t.Helper()
	uri := fileURI(path)
	c.open(uri, 1, text)
	var res lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri}, &res)
	if res.Report == nil {
		t.Fatal("no report")
	}
	return res.Report
}

func verdicts(rep *runner.Report) string {
	var out []string
	for _, ex := range rep.Examples {
		out = append(out, ex.ID+"="+ex.Verdict)
	}
	return strings.Join(out, ",")
}

func TestEditorRouteTestsFileAndReplaysWithZeroCalls(t *testing.T) {
	e := &scriptedEditor{models: []route.EditorModelInfo{editorSonnet, editorGPT}}
	c := startEditor(t, e)
	path := writeAgent(t, "notes.agent.md", editorAgent)
	rep := testFile(t, c, path, editorAgent)
	if rep.Verdict != "pass" || !rep.Journaled || verdicts(rep) != "first=pass,second=pass" {
		t.Fatalf("verdict %s journaled %v examples %s", rep.Verdict, rep.Journaled, verdicts(rep))
	}
	if rep.Route.Agent != (runner.Identity{Route: route.Editor, Model: "copilot/gpt-4.1"}) {
		t.Fatalf("route = %+v, want the editor route with vendor/id", rep.Route.Agent)
	}
	// The preflight listed the models once; each example sent once, to
	// the handle and identity it resolved, with the instructions as the
	// system message and the input as the user message, offering no tools.
	lists, sends := e.counts()
	if lists != 1 || sends != 2 {
		t.Fatalf("lists %d sends %d, want 1 and 2", lists, sends)
	}
	p := e.sends[0]
	if p.Handle != "h1" || p.Model != editorGPT.Identity() || len(p.Tools) != 0 || p.MaxReplyBytes != route.MaxEditorReplyBytes {
		t.Fatalf("send = %+v", p)
	}
	if len(p.Messages) != 2 || p.Messages[0].Role != "system" || p.Messages[0].Content != "You draft release notes." || !reflect.DeepEqual(p.Messages[1], route.Message{Role: "user", Content: "Ada"}) {
		t.Fatalf("messages = %+v", p.Messages)
	}

	// Replay: the retained run rebuilds every turn with zero model calls.
	var ins lsp.InspectResult
	c.mustCall(lsp.MethodInspect, lsp.InspectParams{RunID: rep.RunID}, &ins)
	if ins.Inspection == nil || ins.Inspection.LiveCalls != 0 || len(ins.Inspection.Turns) != 2 {
		t.Fatalf("inspection = %+v", ins.Inspection)
	}
	for _, turn := range ins.Inspection.Turns {
		if turn.Model.Route != route.Editor || turn.Model.Model != "copilot/gpt-4.1" || turn.Answer == nil || !strings.HasPrefix(*turn.Answer, "Release notes: ") {
			t.Fatalf("replayed turn = %+v", turn)
		}
	}
	if _, sends := e.counts(); sends != 2 {
		t.Fatalf("inspect sent %d requests", sends-2)
	}
}

func TestEditorRouteJudgesOnTheAgentsResolvedModel(t *testing.T) {
	score := `{"score": 100, "reasoning": "starts right"}`
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT, editorSonnet}}
	e.reply = func(_ context.Context, n int, p route.EditorSendParams) (any, error) {
		if n == 1 {
			return route.EditorSendResult{Model: p.Model, Text: "Release notes: Ada"}, nil
		}
		return route.EditorSendResult{Model: p.Model, Text: score}, nil
	}
	c := startEditor(t, e)
	path := writeAgent(t, "judged.agent.md", editorJudged)
	rep := testFile(t, c, path, editorJudged)
	if rep.Verdict != "pass" || verdicts(rep) != "only=pass" {
		t.Fatalf("verdict %s: %+v", rep.Verdict, rep.Examples)
	}
	// The list resolved to its first entry VS Code offers (a qualified
	// name), and the judge used that same resolved model, not the list's
	// first name, in two fresh samples.
	want := runner.Identity{Route: route.Editor, Model: "copilot/claude-sonnet-4.6"}
	if rep.Route.Agent != want || rep.Route.Judge == nil || *rep.Route.Judge != want {
		t.Fatalf("routes = %+v / %+v", rep.Route.Agent, rep.Route.Judge)
	}
	lists, sends := e.counts()
	if lists != 1 || sends != 3 {
		t.Fatalf("lists %d sends %d, want 1 and 3 (agent + two judge samples)", lists, sends)
	}
	for _, s := range e.sends {
		if s.Handle != "h2" || len(s.Tools) != 0 {
			t.Fatalf("send = %+v", s)
		}
	}
}

func TestEditorRoutePreflightRefusesBeforeAnyJournal(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		models []route.EditorModelInfo
		want   []string
	}{
		{"not offered", strings.Replace(editorAgent, "model: GPT-4.1", "model: GPT-4", 1), []route.EditorModelInfo{editorGPT, editorSonnet},
			[]string{`model "GPT-4" is not offered by VS Code`, `"GPT-4.1 (copilot)" (id gpt-4.1)`, `"Claude Sonnet 4.6 (copilot)"`}},
		{"ambiguous", editorAgent, []route.EditorModelInfo{editorGPT, {Handle: "h3", ID: "gpt-4.1", Name: "GPT-4.1", Vendor: "ollama"}},
			[]string{"matches 2 models", `"GPT-4.1 (ollama)"`}},
		{"nothing offered", editorAgent, nil, []string{"offers no chat model"}},
		{"judge model not offered", strings.Replace(editorJudged, "rubric:", "judgeModel: o9\n        rubric:", 1), []route.EditorModelInfo{editorGPT, editorSonnet},
			[]string{`judge model "o9"`, "is not offered"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &scriptedEditor{models: tc.models}
			c := startEditor(t, e)
			path := writeAgent(t, "notes.agent.md", tc.text)
			rep := testFile(t, c, path, tc.text)
			if rep.Verdict != "refused" || rep.Refusal == nil || rep.RunID != "" {
				t.Fatalf("verdict %s refusal %+v run %q", rep.Verdict, rep.Refusal, rep.RunID)
			}
			text := rep.Refusal.Message + " / " + rep.Refusal.Next
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("refusal %q does not contain %q", text, w)
				}
			}
			if _, sends := e.counts(); sends != 0 {
				t.Fatalf("a refused preflight sent %d requests", sends)
			}
			var runs lsp.ListRunsResult
			c.mustCall(lsp.MethodListRuns, lsp.DocumentParams{URI: fileURI(path)}, &runs)
			if len(runs.Runs) != 0 {
				t.Fatalf("a refused preflight created journals: %+v", runs.Runs)
			}
		})
	}
}

func TestEditorRouteRefusesRepliesAndStopsLaterExamples(t *testing.T) {
	other := editorGPT.Identity()
	other.ID = "gpt-4o"
	cases := []struct {
		name  string
		reply func(context.Context, int, route.EditorSendParams) (any, error)
		want  string
	}{
		{"another model's identity", func(context.Context, int, route.EditorSendParams) (any, error) {
			return route.EditorSendResult{Model: other, Text: "Release notes: x"}, nil
		}, "did not come from exactly the resolved model"},
		{"tool call on the tool-free path", func(_ context.Context, _ int, p route.EditorSendParams) (any, error) {
			return route.EditorSendResult{Model: p.Model, Text: "Release notes: x", ToolCalls: []route.EditorToolCall{{CallID: "c1", Name: "search", Input: map[string]any{"q": "x"}}}}, nil
		}, "carries a tool call"},
		{"empty answer", func(_ context.Context, _ int, p route.EditorSendParams) (any, error) {
			return route.EditorSendResult{Model: p.Model, Text: "  "}, nil
		}, "the answer is empty"},
		{"provider throws", func(context.Context, int, route.EditorSendParams) (any, error) {
			return nil, editorError(route.EditorProviderError)
		}, "provider failed to answer"},
		{"consent declined", func(context.Context, int, route.EditorSendParams) (any, error) {
			return nil, editorError(route.EditorNoPermissions)
		}, "did not allow kmx to use the model"},
		{"quota", func(context.Context, int, route.EditorSendParams) (any, error) {
			return nil, editorError(route.EditorBlocked)
		}, "quota"},
		{"model disappeared", func(context.Context, int, route.EditorSendParams) (any, error) {
			return nil, editorError(route.EditorUnavailable)
		}, "no longer offered"},
		{"unknown error class", func(context.Context, int, route.EditorSendParams) (any, error) {
			return nil, editorError("teapot")
		}, "not what the kmx protocol says"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}, reply: tc.reply}
			c := startEditor(t, e)
			path := writeAgent(t, "notes.agent.md", editorAgent)
			rep := testFile(t, c, path, editorAgent)
			if verdicts(rep) != "first=unknown,second=unknown" || rep.Verdict == "pass" {
				t.Fatalf("verdicts %s, want both unknown", verdicts(rep))
			}
			if !strings.Contains(rep.Examples[0].Message, tc.want) {
				t.Fatalf("message %q does not say %q", rep.Examples[0].Message, tc.want)
			}
			for _, ex := range rep.Examples {
				if strings.Contains(ex.Message, "SECRET-PROVIDER-TEXT") {
					t.Fatalf("the provider's text reached the report: %q", ex.Message)
				}
			}
			if !strings.HasPrefix(rep.Examples[1].Message, "not sent") {
				t.Fatalf("second example %q, want not sent", rep.Examples[1].Message)
			}
			// No retry, no fallback: exactly one request was sent.
			if _, sends := e.counts(); sends != 1 {
				t.Fatalf("sends = %d, want 1", sends)
			}
		})
	}
}

func TestEditorRouteCancelReachesTheProvider(t *testing.T) {
	inSend := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}}
	var c *client
	e.reply = func(ctx context.Context, _ int, _ route.EditorSendParams) (any, error) {
		inSend <- struct{}{}
		// The extension answers once its token has fired.
		<-release
		return nil, editorError(route.EditorCancelled)
	}
	c = startEditor(t, e)
	// The server told the extension to cancel exactly the send in flight
	// (its token fires, so the provider's does).
	cancelInFlight(t, c, e, editorAgent, inSend, "the first example was never sent", &e.lastID)
	if _, sends := e.counts(); sends != 1 {
		t.Fatalf("sends = %d, want 1: later examples are not sent after cancel", sends)
	}
}

// cancelInFlight tests text as notes.agent.md, waits until inFlight says
// the extension holds a request, presses the progress cancel button, and
// checks that the server sent $/cancelRequest for the request whose ID e
// recorded in lastID, and that no example of the file got a verdict.
func cancelInFlight(t *testing.T, c *client, e *scriptedEditor, text string, inFlight <-chan struct{}, never string, lastID *string) {
	t.Helper()
	path := writeAgent(t, "notes.agent.md", text)
	uri := fileURI(path)
	c.open(uri, 1, text)
	from := c.count()
	done := make(chan error, 1)
	var res lsp.ReportResult
	go func() {
		done <- cancellableCall(context.Background(), c.conn, lsp.MethodTest, lsp.TestParams{URI: uri}, &res)
	}()
	select {
	case <-inFlight:
	case <-time.After(waitFor):
		t.Fatal(never)
	}
	begin, _ := c.waitMessage(from, "$/progress", func(raw json.RawMessage) bool { return strings.Contains(string(raw), `"begin"`) })
	var bp progressJ
	_ = json.Unmarshal(begin.Params, &bp)
	c.notify("window/workDoneProgress/cancel", map[string]any{"token": bp.Token})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	id := *lastID
	e.mu.Unlock()
	c.waitMessage(0, "$/cancelRequest", func(raw json.RawMessage) bool {
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		return json.Unmarshal(raw, &p) == nil && string(p.ID) == id
	})
	if verdicts(res.Report) != "first=unknown,second=unknown" || res.Report.Examples[1].Message != "not sent: cancelled" {
		t.Fatalf("examples = %+v", res.Report.Examples)
	}
}

func TestEditorRouteNeedsTheClientsLanguageModels(t *testing.T) {
	// A client that did not offer vscode.lm (the CLI's case through LSP):
	// a non-fake model with no endpoint is refused, and nothing is asked.
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}}
	c := startServer(t, lsp.Options{Version: "test"})
	c.mu.Lock()
	c.answer = e.answer
	c.mu.Unlock()
	c.initialize(nil)
	path := writeAgent(t, "notes.agent.md", editorAgent)
	rep := testFile(t, c, path, editorAgent)
	if rep.Verdict != "refused" || !strings.Contains(rep.Refusal.Message, "needs an OpenAI-compatible endpoint") {
		t.Fatalf("verdict %s refusal %+v", rep.Verdict, rep.Refusal)
	}
	if lists, sends := e.counts(); lists != 0 || sends != 0 {
		t.Fatalf("lists %d sends %d, want none", lists, sends)
	}
}
