package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
	"github.com/kmxdev/kmx/sidecar/internal/vscodetools"
)

func toolFixture(t *testing.T, rel string) invocation.Request {
	t.Helper()
	path := filepath.Join("..", "..", "..", "testdata", "tools", rel)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return invocation.Request{Path: path, Source: src}
}

// toolAgent writes an agent file (and kmx.yaml, when given) into a fresh
// folder.
func toolAgent(t *testing.T, body, settings string) invocation.Request {
	t.Helper()
	req := agentRequest(t, body)
	if settings != "" {
		if err := os.WriteFile(filepath.Join(filepath.Dir(req.Path), "kmx.yaml"), []byte(settings), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return req
}

const tooledAgent = "---\ntools: [github_list_merged_prs]\n---\nReply with exactly `No pull requests were merged`.\n\n## Examples\n\n```yaml\n- id: weekly\n  input: What was merged?\n  assert:\n    - contains: merged\n```\n"

// TestDeclaredToolIsNeverDropped: the file that used to pass with its tool
// dropped is refused next to a broken kmx.yaml, and otherwise runs on the
// tool harness with the tool offered (journaled with its source), never on
// the tool-free chat harness.
func TestDeclaredToolIsNeverDropped(t *testing.T) {
	home := testutil.PrivateDir(t)
	_, r := mustRefuse(t, false, Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, toolAgent(t, tooledAgent, "tools: [\n"))
	if !strings.Contains(r.Msg, "kmx.yaml") || !strings.Contains(r.Next, "kmx.yaml") {
		t.Errorf("refusal %q / %q does not name kmx.yaml", r.Msg, r.Next)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("a refused run created %d entries in the state folder", len(entries))
	}

	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, toolAgent(t, tooledAgent, ""))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictPass || len(rep.ToolSettings) != 1 || rep.ToolSettings[0] != (invocation.ToolSetting{Name: "github_list_merged_prs", State: "Enabled"}) {
		t.Fatalf("report = %q, toolSettings %+v", rep.Verdict, rep.ToolSettings)
	}
	if rep.Examples[0].ToolCalls != 0 || rep.Examples[0].ToolSources != nil {
		t.Errorf("an uncalled tool was counted: %+v", rep.Examples[0])
	}
	for _, recs := range readJournal(t, home, rep.RunID) {
		var placed journal.SessionPlaced
		if err := journal.Decode(recs[0].Payload, &placed); err != nil {
			t.Fatal(err)
		}
		if placed.Purpose != harness.PurposeAgent {
			continue
		}
		if placed.Harness != harness.LocalTools || len(placed.Tools) != 1 || placed.Tools[0].Source != localtools.SourceUnavailable {
			t.Errorf("agent session placed on %q with tools %+v", placed.Harness, placed.Tools)
		}
	}
}

func TestToolFixturesRunEndToEndOnTheFakeModel(t *testing.T) {
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, toolFixture(t, "merged-prs.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictPass || rep.Summary.Pass != 2 {
		t.Fatalf("verdict %q summary %+v: %+v", rep.Verdict, rep.Summary, rep.Examples)
	}
	want := map[string]string{"recorded": localtools.SourceRecorded, "stub": localtools.SourceUnavailable}
	for _, ex := range rep.Examples {
		if ex.ToolCalls != 1 || len(ex.ToolSources) != 1 || ex.ToolSources[0].Source != want[ex.ID] {
			t.Errorf("example %s: toolCalls %d sources %+v", ex.ID, ex.ToolCalls, ex.ToolSources)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"octo/other", "pullRequests", `"number"`} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the safe report holds tool arguments or results (%q)", secret)
		}
	}

	rep, err = Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, toolFixture(t, "disabled/merged-prs.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictPass || rep.ToolSettings[0].State != localtools.Disabled {
		t.Fatalf("disabled: verdict %q settings %+v: %+v", rep.Verdict, rep.ToolSettings, rep.Examples)
	}
	if ex := rep.Examples[0]; ex.ToolCalls != 0 || ex.ToolSources != nil {
		t.Errorf("a Disabled answer was counted as a dispatch: %+v", ex)
	}

	_, r := mustRefuse(t, false, Options{Options: invocation.Options{StateDir: home}}, toolFixture(t, "refused/merged-prs.agent.md"))
	if !strings.Contains(r.Msg, "twice") {
		t.Errorf("refused fixture: %q", r.Msg)
	}
}

func TestToolRefusalsCreateNothing(t *testing.T) {
	call := func(name string) string {
		return "---\ntools: [github_list_merged_prs]\n---\nCall the tool `" + name + "`\n\n## Examples\n\n```yaml\n- id: weekly\n  input: hi\n  assert:\n    - contains: x\n```\n"
	}
	cases := []struct {
		name, body, settings, want string
	}{
		{"not a mapping", tooledAgent, "- a\n", "top level must be a mapping"},
		{"duplicate key", tooledAgent, "tools:\n  github_list_merged_prs: Enabled\n  github_list_merged_prs: Enabled\n", "twice"},
		{"tabs", tooledAgent, "tools:\n\tgithub_list_merged_prs: Enabled\n", "tab"},
		{"anchor and alias", tooledAgent, "x: &s Disabled\ntools:\n  github_list_merged_prs: *s\n", "anchor or alias"},
		{"Ask", tooledAgent, "tools:\n  github_list_merged_prs: Ask\n", "Ask, which is not supported yet"},
		{"unknown state", tooledAgent, "tools:\n  github_list_merged_prs: Sometimes\n", "unknown state"},
		{"undeclared name", tooledAgent, "tools:\n  ping: Enabled\n", `"ping", which no agent file in this folder declares`},
		{"over 64 KiB", tooledAgent, "# " + strings.Repeat("x", localtools.MaxSettingsBytes) + "\n", "64 KiB"},
		{"call of an undeclared tool", call("ping"), "", `"ping", which the agent file does not declare`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := testutil.PrivateDir(t)
			_, r := mustRefuse(t, false, Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, toolAgent(t, tc.body, tc.settings))
			if !strings.Contains(r.Msg+" "+r.Next, tc.want) || r.Next == "" {
				t.Errorf("refusal %q (next %q) does not say %q", r.Msg, r.Next, tc.want)
			}
			if entries, _ := os.ReadDir(home); len(entries) != 0 {
				t.Errorf("a refused run created %d entries", len(entries))
			}
		})
	}
	t.Run("symlink", func(t *testing.T) {
		home := testutil.PrivateDir(t)
		req := toolAgent(t, tooledAgent, "")
		target := filepath.Join(t.TempDir(), "elsewhere.yaml")
		if err := os.WriteFile(target, []byte("tools: {}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(filepath.Dir(req.Path), "kmx.yaml")); err != nil {
			t.Skip("symlinks unavailable:", err)
		}
		_, r := mustRefuse(t, false, Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, req)
		if !strings.Contains(r.Msg, "symbolic link") {
			t.Errorf("refusal %q", r.Msg)
		}
	})
	t.Run("credential shape in a recorded result", func(t *testing.T) {
		home := testutil.PrivateDir(t)
		shaped := "gh" + "p_" + strings.Repeat("A1b2", 9)
		body := "---\ntools: [ping]\n---\nCall the tool `ping`\n\n## Examples\n\n```yaml\n- id: one\n  input: hi\n  tools:\n    ping:\n      recorded:\n        calls:\n          - arguments: {}\n            result: \"" + shaped + "\"\n  assert:\n    - contains: x\n```\n"
		_, r := mustRefuse(t, false, Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, toolAgent(t, body, ""))
		if strings.Contains(r.Msg, shaped) {
			t.Errorf("refusal echoes the credential: %q", r.Msg)
		}
		if entries, _ := os.ReadDir(home); len(entries) != 0 {
			t.Errorf("a refused run created %d entries", len(entries))
		}
	})
	t.Run("kmx.yaml in a parent folder is not read", func(t *testing.T) {
		home := testutil.PrivateDir(t)
		parent := t.TempDir()
		if err := os.WriteFile(filepath.Join(parent, "kmx.yaml"), []byte("tools: [broken\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(parent, "agents")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "a.agent.md")
		if err := os.WriteFile(path, []byte(tooledAgent), 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, invocation.Request{Path: path, Source: []byte(tooledAgent)})
		if err != nil || rep.Verdict != VerdictPass {
			t.Errorf("a parent folder's kmx.yaml changed the run: %v %v", err, rep)
		}
	})
}

// TestToolAssertionsNeedDeclaredTools: on a file that declares no tools a
// tool assertion stays refused, saying what to change.
func TestToolAssertionsNeedDeclaredTools(t *testing.T) {
	body := "Reply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: one\n  input: hi\n  assert:\n    - toolNotCalled: ping\n```\n"
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, agentRequest(t, body))
	if err == nil && rep.Verdict == VerdictPass {
		t.Fatalf("a tool assertion passed on a file with no tools")
	}
}

// TestUnboundReferencesAnswerTheStub: a real-format declaration (a set, a
// full reference name, a legacy name, an MCP wildcard) runs on the fake
// model; the call of a tool with no recording or binding answers "not
// available in this test" (source unavailable), never a refusal; the model
// is offered each tool once under an endpoint-safe function name with VS
// Code's definition (journaled); the report and the tool assertions use
// the names the file writes; the run replays with zero calls.
func TestUnboundReferencesAnswerTheStub(t *testing.T) {
	body := "---\ntools: ['search', 'edit/editFiles', 'codebase', 'runCommands', 'web/fetch', 'github/*']\n---\n" +
		"You review changes.\n\nCall the tool `edit/editFiles`\n\n## Examples\n\n```yaml\n- id: stubbed\n  input: fix the typo\n  assert:\n" +
		"    - toolCalled: edit/editFiles\n    - toolCalled: edit\n    - toolCalled: editFiles\n    - toolNotCalled: search\n    - toolNotCalled: search/codebase\n" +
		"    - contains: not available in this test\n" +
		"- id: recorded\n  input: fix it\n  assert:\n    - contains: done\n  tools:\n    edit/editFiles:\n      recorded:\n        calls:\n          - arguments: {}\n            result: done\n```\n"
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, agentRequest(t, body))
	if err != nil || rep.Verdict != VerdictPass {
		t.Fatalf("Test: %v %+v", err, rep)
	}
	wantSources := map[string]string{"stubbed": localtools.SourceUnavailable, "recorded": localtools.SourceRecorded}
	for _, ex := range rep.Examples {
		if ex.ToolCalls != 1 || len(ex.ToolSources) != 1 || ex.ToolSources[0] != (ToolSource{Name: "edit/editFiles", Source: wantSources[ex.ID]}) {
			t.Errorf("%s: toolCalls %d sources %+v", ex.ID, ex.ToolCalls, ex.ToolSources)
		}
	}
	in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if in.LiveCalls != 0 || in.Summary.Verified != 2 {
		t.Fatalf("inspection: liveCalls %d summary %+v", in.LiveCalls, in.Summary)
	}
	var turn readback.InspectedTurn
	for _, tt := range in.Turns {
		if tt.Example == "stubbed" {
			turn = tt
		}
	}
	var fns []string
	for _, tool := range turn.Tools {
		fns = append(fns, tool.Function)
		if tool.Function == "edit_editFiles" && (tool.Name != "edit/editFiles" || !strings.Contains(tool.Parameters, `"oldString"`) || tool.Table != vscodetools.TableVersion) {
			t.Errorf("edit/editFiles offered as %+v", tool)
		}
		if tool.Name == "github/*" && (tool.Function != "github_all" || tool.Parameters != `{"type":"object","properties":{}}`) {
			t.Errorf("github/* offered as %+v", tool)
		}
	}
	want := []string{"search_changes", "search_codebase", "search_fileSearch", "search_listDirectory", "search_searchResults", "search_textSearch", "search_usages",
		"edit_editFiles", "execute_runInTerminal", "execute_getTerminalOutput", "read_terminalLastCommand", "read_terminalSelection", "web_fetch", "github_all"}
	if strings.Join(fns, ",") != strings.Join(want, ",") {
		t.Errorf("offered functions %v\nwant %v", fns, want)
	}
	if len(turn.ToolCalls) != 1 || turn.ToolCalls[0].Name != "edit_editFiles" || *turn.ToolCalls[0].Result != localtools.UnavailableText {
		t.Errorf("stubbed call = %+v", turn.ToolCalls)
	}
}

// TestInspectShowsTheToolTrace: a retained tool run replays with zero model
// and tool calls and shows each call with its result and source.
func TestInspectShowsTheToolTrace(t *testing.T) {
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, toolFixture(t, "merged-prs.agent.md"))
	if err != nil || rep.Verdict != VerdictPass {
		t.Fatalf("Test: %v %v", err, rep)
	}
	in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if in.LiveCalls != 0 || in.Summary.Verified != 2 {
		t.Fatalf("inspection: liveCalls %d summary %+v", in.LiveCalls, in.Summary)
	}
	want := map[string]string{"recorded": localtools.SourceRecorded, "stub": localtools.SourceUnavailable}
	for _, turn := range in.Turns {
		if turn.Harness != harness.LocalTools || len(turn.Tools) != 1 || len(turn.ToolCalls) != 1 {
			t.Fatalf("turn %s: harness %q tools %+v calls %+v", turn.Example, turn.Harness, turn.Tools, turn.ToolCalls)
		}
		c := turn.ToolCalls[0]
		if c.Name != "github_list_merged_prs" || c.Source != want[turn.Example] || c.Result == nil || c.Arguments != "{}" {
			t.Errorf("turn %s call = %+v", turn.Example, c)
		}
		// The fake answers with the result it got.
		if turn.Answer == nil || *turn.Answer != *c.Result {
			t.Errorf("turn %s answer %v, result %v", turn.Example, turn.Answer, *c.Result)
		}
	}
}

// TestConversationFreezesDeclaredTools: a conversation turn of a
// tool-declaring file carries every declared tool, frozen from kmx.yaml
// alone (Disabled wins; no recording or binding, so the rest answer the
// stub), and on an endpoint a reference is offered under its function name.
func TestConversationFreezesDeclaredTools(t *testing.T) {
	req := toolAgent(t, "---\ntools: [ping, pong]\n---\nSay ok.\n", "tools:\n  pong: Disabled\n")
	prep, err := invocation.PrepareChat(context.Background(), invocation.Options{Model: "fake"}, req.Path, req.Source, "hi")
	if err != nil {
		t.Fatalf("PrepareChat: %v", err)
	}
	want := []localtools.Tool{
		{Name: "ping", State: localtools.Enabled, Source: localtools.SourceUnavailable},
		{Name: "pong", State: localtools.Disabled, Source: localtools.SourceDisabled},
	}
	if !reflect.DeepEqual(prep.Tools, want) {
		t.Fatalf("chat tools = %+v, want %+v", prep.Tools, want)
	}
	req = agentRequest(t, "---\nmodel: llama3\ntools: [web/fetch]\n---\nSay ok.\n")
	// web/fetch is offered on an endpoint under its function name web_fetch.
	prep, err = invocation.PrepareChat(context.Background(), invocation.Options{Endpoint: "http://127.0.0.1:11434/v1"}, req.Path, req.Source, "hi")
	if err != nil || len(prep.Tools) != 1 || prep.Tools[0].FunctionName() != "web_fetch" {
		t.Fatalf("PrepareChat: %v %+v, want web/fetch offered as web_fetch", err, prep)
	}
}

// TestToolBindingRefusesBeforeAnything: with --tool-bindings, an Enabled
// bound tool reads its credential variable once, and every refusal (missing
// or empty credential, the credential in the agent file or the input)
// comes before the journal exists. A Disabled or undeclared bound tool never reads the variable.
func TestToolBindingRefusesBeforeAnything(t *testing.T) {
	// Not credential-shaped: only the exact value identifies it.
	tok := "opaque-test-value-" + strings.Repeat("7", 8)
	binding := &localtools.Binding{Path: "tools.json", Name: localtools.GitHubTool, Repository: "octo/repo", URL: localtools.GitHubMCPURL, CredentialEnv: "KMX_TEST_GH"}
	cases := []struct {
		name, body, settings, value, want string
		input                             *string
		reads                             int
	}{
		{name: "missing credential", body: tooledAgent, want: "KMX_TEST_GH is not set or is empty", reads: 1},
		{name: "credential in the agent file", body: strings.Replace(tooledAgent, "What was merged?", "What was merged? "+tok, 1), value: tok, want: "the agent file contains the value of KMX_TEST_GH", reads: 1},
		{name: "credential in the input", body: tooledAgent, value: tok, input: &tok, want: "the input contains the value of KMX_TEST_GH", reads: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := testutil.PrivateDir(t)
			reads := 0
			getenv := func(name string) string {
				if name == "KMX_TEST_GH" {
					reads++
					return tc.value
				}
				return ""
			}
			req := toolAgent(t, tc.body, tc.settings)
			req.Input = tc.input
			_, r := mustRefuse(t, tc.input != nil, Options{Options: invocation.Options{StateDir: home, Model: "fake", Getenv: getenv, ToolBinding: binding}}, req)
			if !strings.Contains(r.Msg, tc.want) || r.Next == "" {
				t.Errorf("refusal %q (next %q) does not say %q", r.Msg, r.Next, tc.want)
			}
			if strings.Contains(r.Msg+r.Next, tok) {
				t.Error("the refusal quotes the credential")
			}
			if reads != tc.reads {
				t.Errorf("read the credential variable %d times, want %d", reads, tc.reads)
			}
			if entries, _ := os.ReadDir(home); len(entries) != 0 {
				t.Errorf("a refused run created %d entries", len(entries))
			}
		})
	}
	for _, tc := range []struct{ name, body, settings string }{
		{"Disabled", tooledAgent, "tools:\n  github_list_merged_prs: Disabled\n"},
		{"undeclared", strings.Replace(tooledAgent, "---\ntools: [github_list_merged_prs]\n---\n", "", 1), ""},
	} {
		t.Run(tc.name+" bound tool reads nothing", func(t *testing.T) {
			home := testutil.PrivateDir(t)
			getenv := func(name string) string {
				if name == "KMX_TEST_GH" {
					t.Errorf("read the credential variable of a %s tool", tc.name)
				}
				return ""
			}
			rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Model: "fake", Getenv: getenv, ToolBinding: binding}}, toolAgent(t, tc.body, tc.settings))
			if err != nil || rep.Verdict != VerdictPass {
				t.Fatalf("Test = %v, %v", rep, err)
			}
		})
	}
}

// TestRealFormatAgentsRunWithStubs: real-format agent files (tools lists
// as VS Code writes them: sets, full and legacy names, MCP references;
// examples in NAME.agent.examples.yaml beside each) run on the fake model
// untouched: each passes, every call no recording answers is stubbed, and
// each run replays offline with zero model and tool calls.
func TestRealFormatAgentsRunWithStubs(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "testdata", "vscode-agents")
	files, err := filepath.Glob(filepath.Join(dir, "*.agent.md"))
	if err != nil || len(files) < 4 {
		t.Fatalf("agent files: %v %v", files, err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			home := testutil.PrivateDir(t)
			rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, invocation.Request{Path: path, Source: src})
			if err != nil || rep.Verdict != VerdictPass {
				t.Fatalf("Test: %v %+v", err, rep)
			}
			stubbed := map[string]bool{}
			for _, ex := range rep.Examples {
				for _, s := range ex.ToolSources {
					if s.Source != localtools.SourceUnavailable && s.Source != localtools.SourceRecorded {
						t.Errorf("%s: %s answered by %s", ex.ID, s.Name, s.Source)
					}
					if s.Source == localtools.SourceUnavailable {
						stubbed[s.Name] = true
					}
				}
			}
			if len(stubbed) > 0 && (rep.Stubbed == nil || len(rep.Stubbed.Tools) != len(stubbed) || rep.Stubbed.Next == "") {
				t.Errorf("stubbed %v, report says %+v", stubbed, rep.Stubbed)
			}
			in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if in.LiveCalls != 0 || in.Summary.Verified != len(rep.Examples) {
				t.Fatalf("replay: liveCalls %d summary %+v", in.LiveCalls, in.Summary)
			}
			for _, turn := range in.Turns {
				for _, c := range turn.ToolCalls {
					if c.Source == localtools.SourceUnavailable && (c.Result == nil || *c.Result != localtools.UnavailableText) {
						t.Errorf("%s: stubbed call %+v", turn.Example, c)
					}
				}
			}
		})
	}
}

// toolUser is an OpenAI-compatible endpoint on 127.0.0.1 that behaves like
// a model that uses its tools: offered tools and given no results yet, it
// calls the first three (arguments filled from each schema's required
// properties); given results, it answers with the functions it called and
// every result; offered none, it answers "Answer: " and the input. It
// counts requests, and the requests that offered tools.
type toolUser struct {
	srv            *httptest.Server
	sends, offered atomic.Int64
}

func newToolUser(t *testing.T) *toolUser {
	t.Helper()
	u := &toolUser{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.sends.Add(1)
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				ToolCalls []struct {
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name       string         `json:"name"`
					Parameters map[string]any `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if len(req.Tools) > 0 {
			u.offered.Add(1)
		}
		message := map[string]any{"role": "assistant"}
		finish := "stop"
		var called, results, input []string
		for _, m := range req.Messages {
			switch {
			case m.Role == "tool" && m.Content != nil:
				results = append(results, *m.Content)
			case m.Role == "assistant":
				for _, c := range m.ToolCalls {
					called = append(called, c.Function.Name)
				}
			case m.Role == "user" && m.Content != nil:
				input = append(input, *m.Content)
			}
		}
		switch {
		case len(results) > 0:
			message["content"] = "Used " + strings.Join(called, ", ") + ".\n" + strings.Join(results, "\n")
		case len(req.Tools) > 0:
			var calls []any
			for i, tool := range req.Tools[:min(3, len(req.Tools))] {
				args, _ := json.Marshal(argumentsFor(tool.Function.Parameters, input[len(input)-1]))
				calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d", i+1), "type": "function",
					"function": map[string]any{"name": tool.Function.Name, "arguments": string(args)}})
			}
			message["content"], message["tool_calls"], finish = nil, calls, "tool_calls"
		default:
			message["content"] = "Answer: " + input[len(input)-1]
		}
		body, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// argumentsFor fills a schema's required properties as a model would:
// strings with the input, arrays with one string, numbers 1, booleans false.
func argumentsFor(schema map[string]any, input string) map[string]any {
	out := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	required, _ := schema["required"].([]any)
	for _, r := range required {
		name, _ := r.(string)
		p, _ := props[name].(map[string]any)
		switch p["type"] {
		case "array":
			out[name] = []string{input}
		case "number", "integer":
			out[name] = 1
		case "boolean":
			out[name] = false
		default:
			out[name] = input
		}
	}
	return out
}

// TestRealFormatAgentsRunOnAToolCallingEndpoint: every real-format agent
// file, untouched (the set the fake model runs, and a second set whose
// examples are written for a model that uses its tools), runs against a
// tool-calling endpoint: no example is refused or unknown, each tool
// example takes exactly the two sends of the harness, every call no
// recording answers gets the stub, the second set passes, and each run
// replays offline with zero model and tool calls.
func TestRealFormatAgentsRunOnAToolCallingEndpoint(t *testing.T) {
	root := filepath.Join("..", "..", "..", "testdata", "vscode-agents")
	fakeSet, _ := filepath.Glob(filepath.Join(root, "*.agent.md"))
	endpointSet, _ := filepath.Glob(filepath.Join(root, "on-endpoint", "*.agent.md"))
	if len(fakeSet) < 4 || len(endpointSet) < 4 {
		t.Fatalf("agent files: %v %v", fakeSet, endpointSet)
	}
	for _, path := range append(fakeSet, endpointSet...) {
		mustPass := strings.Contains(path, "on-endpoint")
		t.Run(filepath.Base(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			u := newToolUser(t)
			home := testutil.PrivateDir(t)
			rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Endpoint: u.srv.URL + "/v1", Model: "tool-user-1"}}, invocation.Request{Path: path, Source: src})
			if err != nil {
				t.Fatalf("Test: %v", err)
			}
			if mustPass && rep.Verdict != VerdictPass {
				t.Errorf("verdict %s, want pass: %+v", rep.Verdict, rep.Examples)
			}
			stubbedCalls := 0
			for _, ex := range rep.Examples {
				if ex.Verdict == VerdictUnknown || ex.Verdict == VerdictRefused {
					t.Errorf("%s: %s: %+v", ex.ID, ex.Verdict, ex)
				}
				for _, s := range ex.ToolSources {
					switch s.Source {
					case localtools.SourceUnavailable:
						stubbedCalls++
					case localtools.SourceRecorded:
					default:
						t.Errorf("%s: %s answered by %s", ex.ID, s.Name, s.Source)
					}
				}
			}
			if stubbedCalls == 0 || rep.Stubbed == nil || rep.Stubbed.Next == "" {
				t.Errorf("stubbed calls %d, report says %+v", stubbedCalls, rep.Stubbed)
			}
			if sends, offered := u.sends.Load(), u.offered.Load(); sends != 2*int64(len(rep.Examples)) || offered != sends {
				t.Errorf("%d sends, %d offering tools, for %d examples: want two sends per example, both offering the tools", sends, offered, len(rep.Examples))
			}
			before := u.sends.Load()
			in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if in.LiveCalls != 0 || in.Summary.Verified != len(rep.Examples) || u.sends.Load() != before {
				t.Fatalf("replay: liveCalls %d summary %+v sends %d -> %d", in.LiveCalls, in.Summary, before, u.sends.Load())
			}
			for _, turn := range in.Turns {
				for _, c := range turn.ToolCalls {
					if c.Source == localtools.SourceUnavailable && (c.Result == nil || *c.Result != localtools.UnavailableText) {
						t.Errorf("%s: stubbed call %+v", turn.Example, c)
					}
				}
			}
		})
	}
}
