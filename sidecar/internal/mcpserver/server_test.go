package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/cli"
	"github.com/kmxdev/kmx/sidecar/internal/failures"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/mcpserver"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// fixture returns the absolute path of a file in testdata/mcp.
func fixture(t *testing.T, name string) string {
	t.Helper()
	return testdataFile(t, "mcp", name)
}

// testdataFile returns the absolute path of an existing file in the
// repository's testdata/folder.
func testdataFile(t *testing.T, folder, name string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	p, err := filepath.Abs(filepath.Join(filepath.Dir(here), "..", "..", "..", "testdata", folder, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture %s/%s: %v", folder, name, err)
	}
	return p
}

// testRoots are the roots the in-process and binary servers are started
// with: the repository's testdata (every fixture) and the temporary folder
// the tests write agents in.
func testRoots(t *testing.T) []string {
	t.Helper()
	roots, err := mcpserver.ResolveRoots([]string{filepath.Dir(filepath.Dir(fixture(t, "pass.agent.md"))), os.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return roots
}

// rootArgs are testRoots as kmx mcp flags.
func rootArgs(t *testing.T) []string {
	var args []string
	for _, r := range testRoots(t) {
		args = append(args, "--root", r)
	}
	return args
}

func envWith(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// connect starts the server in-process and returns a connected go-sdk client.
func connect(t *testing.T, cfg mcpserver.Config) *mcp.ClientSession {
	t.Helper()
	return connectWithRoots(t, cfg)
}

// connectFresh is connect with KMX_HOME a fresh private folder, so the
// test's runs and conversations start from nothing.
func connectFresh(t *testing.T) *mcp.ClientSession {
	t.Helper()
	return connect(t, mcpserver.Config{Version: "test", Getenv: envWith(map[string]string{"KMX_HOME": testutil.PrivateDir(t)})})
}

// connectWithRoots is connect with a client that offers the given folders
// as its MCP roots (none: a client with no roots).
func connectWithRoots(t *testing.T, cfg mcpserver.Config, clientRoots ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if cfg.Roots == nil {
		cfg.Roots, cfg.ExplicitRoots = testRoots(t), true
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(cfg).Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "kmx-test", Version: "0"}, nil)
	for _, r := range clientRoots {
		//lint:ignore SA1019 the clients that offer roots speak protocols before their deprecation
		client.AddRoots(&mcp.Root{URI: "file://" + filepath.ToSlash(r)})
	}
	var opts *mcp.ClientSessionOptions
	if len(clientRoots) > 0 {
		// From protocol 2026-07-28 on, a server may not ask for roots
		// during a call; the clients that offer roots speak an earlier one.
		opts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	cs, err := client.Connect(ctx, ct, opts)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v (a tool problem must be an isError result)", tool, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// decode re-reads a result's structured content into v.
func decode(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	if res.StructuredContent == nil {
		t.Fatalf("no structured content; text: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content is not the expected JSON: %v\n%s", err, b)
	}
}

func TestListTools(t *testing.T) {
	cs := connect(t, mcpserver.Config{Version: "test"})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"Run":     {"examples", "file", "input", "model"},
		"Test":    {"baseline", "examples", "file", "fromRun", "model", "models", "trials"},
		"Explain": {"file", "showContent"},
		"Chat":    {"conversation", "file", "input", "model"},
	}
	if len(res.Tools) != len(want) {
		t.Fatalf("got %d tools, want %d", len(res.Tools), len(want))
	}
	for _, tool := range res.Tools {
		props, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		b, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatal(err)
		}
		var got []string
		for p, raw := range schema.Properties {
			got = append(got, p)
			// One type per argument: clients that map tool schemas onto a
			// single-type dialect cannot read ["null", T].
			var prop struct {
				Type any `json:"type"`
			}
			if err := json.Unmarshal(raw, &prop); err != nil {
				t.Fatal(err)
			}
			if _, ok := prop.Type.(string); !ok {
				t.Errorf("%s.%s has type %v, want one type", tool.Name, p, prop.Type)
			}
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(props, ",") {
			t.Errorf("%s arguments = %v, want %v (no endpoint or credential argument, ever)", tool.Name, got, props)
		}
		if strings.Join(schema.Required, ",") != "file" {
			t.Errorf("%s required = %v, want [file]", tool.Name, schema.Required)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", tool.Name)
		}
		if !strings.Contains(tool.Description, "local preview") && tool.Name != "Explain" {
			t.Errorf("%s description does not say local preview: %q", tool.Name, tool.Description)
		}
	}
}

func TestCalls(t *testing.T) {
	missingInRoot := filepath.Join(filepath.Dir(fixture(t, "pass.agent.md")), "missing.agent.md")
	// Relative to the working directory, up past any root the test names.
	outsideRel := strings.Repeat("../", 32) + "missing.agent.md"
	tests := []struct {
		name        string
		tool        string
		args        map[string]any
		wantError   bool
		wantVerdict string
		wantSummary runner.Summary
		wantText    []string
		notText     []string
	}{
		{
			name: "test with one failing example", tool: "Test",
			args:        map[string]any{"file": "triage.agent.md"},
			wantVerdict: "fail", wantSummary: runner.Summary{Pass: 1, Fail: 1},
			wantText: []string{"local preview: 1 pass, 1 fail, 0 unknown — verdict fail", "fail billing-question: assertion 1 (contains)"},
		},
		{
			name: "test that passes", tool: "Test",
			args:        map[string]any{"file": "pass.agent.md"},
			wantVerdict: "pass", wantSummary: runner.Summary{Pass: 2},
			wantText: []string{"local preview: 2 pass, 0 fail, 0 unknown — verdict pass"},
		},
		{
			name: "an inconclusive judge is unknown, not pass", tool: "Test",
			args:        map[string]any{"file": "unknown.agent.md"},
			wantVerdict: "unknown", wantSummary: runner.Summary{Unknown: 1},
			wantText: []string{"0 pass, 0 fail, 1 unknown — verdict unknown", "inconclusive"},
			notText:  []string{"verdict pass", "1 pass"},
		},
		{
			name: "example subset", tool: "Test",
			args:        map[string]any{"file": "triage.agent.md", "examples": []string{"crash-report"}},
			wantVerdict: "pass", wantSummary: runner.Summary{Pass: 1},
		},
		{
			name: "run shows answers", tool: "Run",
			args:        map[string]any{"file": "pass.agent.md", "examples": []string{"greet"}},
			wantVerdict: "pass", wantSummary: runner.Summary{Pass: 1},
			wantText: []string{"answer: hello"},
		},
		{
			name: "run an ad-hoc input", tool: "Run",
			args:     map[string]any{"file": "pass.agent.md", "input": "Hi"},
			wantText: []string{"local preview:", "answer: hello"},
		},
		{
			name: "file with an error is refused with its diagnostics", tool: "Test",
			args: map[string]any{"file": "broken.agent.md"}, wantError: true, wantVerdict: "refused",
			wantText: []string{"has 1 error(s)", "KMX3001", "broken.agent.md:15:7: error KMX3001", "next: fix the errors listed, then try again"},
		},
		{
			name: "unknown example is refused", tool: "Test",
			args: map[string]any{"file": "triage.agent.md", "examples": []string{"no-such"}}, wantError: true, wantVerdict: "refused",
			wantText: []string{"no-such", "next: "},
		},
		{
			name: "a real model without a startup endpoint is refused", tool: "Test",
			args: map[string]any{"file": "pass.agent.md", "model": "gpt-5.6-terra"}, wantError: true, wantVerdict: "refused",
			wantText: []string{"needs an OpenAI-compatible endpoint", "next: pass the server's startup endpoint URL", `or choose model "fake"`}, notText: []string{"--"},
		},
		{
			name: "a missing file is refused", tool: "Run",
			args: map[string]any{"file": missingInRoot}, wantError: true,
			wantText: []string{"Run: cannot read " + missingInRoot, "next: check the path"},
		},
		{
			name: "a relative file outside the roots is refused like any other", tool: "Test",
			args: map[string]any{"file": outsideRel}, wantError: true,
			wantText: []string{"Test: " + outsideRel + " is not an *.agent.md file inside this server's roots", "next: pass an *.agent.md file (or the NAME.agent.examples.yaml beside it) under"},
		},
		{
			name: "an empty file argument is refused", tool: "Test",
			args: map[string]any{"file": ""}, wantError: true,
			wantText: []string{"name one agent file", "next: pass the absolute path"},
		},
		{
			name: "an endpoint argument is rejected by the schema", tool: "Test",
			args: map[string]any{"file": "pass.agent.md", "endpoint": "http://127.0.0.1:9/v1"}, wantError: true,
			wantText: []string{"validating", "endpoint"},
		},
		{
			name: "a missing file argument is rejected by the schema", tool: "Run",
			args: map[string]any{}, wantError: true, wantText: []string{"file"},
		},
	}
	cs := connectFresh(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if f, ok := tc.args["file"].(string); ok && f != "" && !strings.Contains(f, "missing") {
				tc.args["file"] = fixture(t, f)
			}
			res := call(t, cs, tc.tool, tc.args)
			got := text(res)
			if res.IsError != tc.wantError {
				t.Fatalf("isError = %v, want %v; text:\n%s", res.IsError, tc.wantError, got)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(got, w) {
					t.Errorf("text lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.notText {
				if strings.Contains(got, n) {
					t.Errorf("text has %q:\n%s", n, got)
				}
			}
			if tc.wantVerdict == "" {
				return
			}
			var rep runner.Report
			decode(t, res, &rep)
			if rep.Schema != runner.ReportSchema || rep.Label != runner.Label {
				t.Errorf("schema/label = %q/%q", rep.Schema, rep.Label)
			}
			if rep.Verdict != tc.wantVerdict {
				t.Errorf("verdict = %q, want %q", rep.Verdict, tc.wantVerdict)
			}
			if !tc.wantError && rep.Summary != tc.wantSummary {
				t.Errorf("summary = %+v, want %+v", rep.Summary, tc.wantSummary)
			}
			if tc.wantError && (rep.Refusal == nil || rep.Refusal.Next == "") {
				t.Errorf("refused report has no refusal with a next step: %+v", rep.Refusal)
			}
			if !tc.wantError && (!rep.Journaled || rep.RunID == "") {
				t.Errorf("a completed run must be journaled: journaled=%v runId=%q", rep.Journaled, rep.RunID)
			}
			if tc.tool == "Test" {
				for _, ex := range rep.Examples {
					if ex.Answer != nil {
						t.Errorf("Test report shows the answer of %s", ex.ID)
					}
				}
			}
		})
	}
}

// TestSameReportAsCLI: the structured content is the report kmx test
// --json prints for the same file, apart from what differs per run.
func TestSameReportAsCLI(t *testing.T) {
	home := testutil.PrivateDir(t)
	getenv := envWith(map[string]string{"KMX_HOME": home})
	file := fixture(t, "triage.agent.md")

	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{"test", file, "--json"}, cli.Env{Stdout: &stdout, Stderr: &stderr, Getenv: getenv})
	if code != cli.ExitFailure {
		t.Fatalf("kmx test --json exit %d, want %d; stderr: %s", code, cli.ExitFailure, stderr.String())
	}
	var fromCLI runner.Report
	if err := json.Unmarshal(stdout.Bytes(), &fromCLI); err != nil {
		t.Fatal(err)
	}

	cs := connect(t, mcpserver.Config{Version: cli.Version, Getenv: getenv})
	res := call(t, cs, "Test", map[string]any{"file": file})
	var fromMCP runner.Report
	decode(t, res, &fromMCP)

	normalize := func(r *runner.Report) []byte {
		r.RunID, r.JournalPath, r.DurationMs = "", "", 0
		for i := range r.Examples {
			r.Examples[i].DurationMs = 0
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a, b := normalize(&fromCLI), normalize(&fromMCP); !bytes.Equal(a, b) {
		t.Errorf("MCP report differs from kmx test --json:\ncli: %s\nmcp: %s", a, b)
	}
}

// notVerified is an Executor whose turns complete but never verify by
// replay; nothing it reports may become a pass.
type notVerified struct{}

func (notVerified) Execute(_ context.Context, t runner.Turn) (runner.Outcome, error) {
	return runner.Outcome{Answer: "hello", Completed: true, Verified: false, Journaled: true, Problem: "replay gave a different answer"}, nil
}

func TestUnverifiedTurnIsNeverPass(t *testing.T) {
	cs := connect(t, mcpserver.Config{
		Version: "test",
		Getenv:  envWith(map[string]string{"KMX_HOME": testutil.PrivateDir(t)}),
		NewExecutor: func(*journal.Journal, *invocation.Plan) (runner.Executor, func(), error) {
			return notVerified{}, func() {}, nil
		},
	})
	for _, tool := range []string{"Run", "Test"} {
		res := call(t, cs, tool, map[string]any{"file": fixture(t, "pass.agent.md")})
		var rep runner.Report
		decode(t, res, &rep)
		if rep.Verdict == runner.VerdictPass || rep.Summary.Pass != 0 {
			t.Errorf("%s: unverified turns reported as %q with %d pass", tool, rep.Verdict, rep.Summary.Pass)
		}
		if got := text(res); strings.Contains(got, "verdict pass") || !strings.Contains(got, "0 pass") {
			t.Errorf("%s summary claims a pass: %s", tool, got)
		}
	}
}

func TestExplain(t *testing.T) {
	cs := connectFresh(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "triage.agent.md")
	src, err := os.ReadFile(fixture(t, "triage.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, src, 0o600); err != nil {
		t.Fatal(err)
	}

	res := call(t, cs, "Explain", map[string]any{"file": file})
	if res.IsError || !strings.Contains(text(res), "nothing is retained") {
		t.Fatalf("before any Test: isError=%v text=%s", res.IsError, text(res))
	}

	if res := call(t, cs, "Test", map[string]any{"file": file}); res.IsError {
		t.Fatalf("Test refused: %s", text(res))
	}
	tests := []struct {
		name        string
		showContent bool
		edit        bool
		relation    string
		wantText    []string
	}{
		{"current, content withheld", false, false, failures.Current, []string{"1 retained Test failure record(s)", "fail billing-question", "showContent"}},
		{"current, content shown", true, false, failures.Current, []string{"verdict fail, current"}},
		{"history after an edit", false, true, failures.Historical, []string{"this is history"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.edit {
				if err := os.WriteFile(file, append(src, '\n'), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			res := call(t, cs, "Explain", map[string]any{"file": file, "showContent": tc.showContent})
			if res.IsError {
				t.Fatalf("Explain refused: %s", text(res))
			}
			var exp failures.Explanation
			decode(t, res, &exp)
			if len(exp.Records) != 1 || exp.Records[0].Relation != tc.relation || exp.ContentShown != tc.showContent {
				t.Fatalf("explanation = %+v", exp)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(text(res), w) {
					t.Errorf("text lacks %q:\n%s", w, text(res))
				}
			}
			shown := false
			for _, ex := range exp.Records[0].Examples {
				for _, a := range ex.Assertions {
					shown = shown || a.Actual != ""
				}
			}
			if shown != tc.showContent {
				t.Errorf("answer excerpts shown = %v, want %v", shown, tc.showContent)
			}
		})
	}
}

func TestExplainRefusesUnsafeState(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, home string
		want       []string
	}{
		{"relative KMX_HOME", "relative/home", []string{"not an absolute path", "next: restart this server with its environment fixed: set KMX_HOME"}},
		{"group-readable KMX_HOME", open, []string{"refusing state path", "next: run chmod"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := connect(t, mcpserver.Config{Version: "test", Getenv: envWith(map[string]string{"KMX_HOME": tc.home})})
			res := call(t, cs, "Explain", map[string]any{"file": fixture(t, "triage.agent.md")})
			if !res.IsError {
				t.Fatalf("not refused: %s", text(res))
			}
			for _, w := range tc.want {
				if !strings.Contains(text(res), w) {
					t.Errorf("text lacks %q:\n%s", w, text(res))
				}
			}
			saidOnce(t, text(res))
		})
	}
}

// saidOnce fails when a refusal says its next step twice: once at the end
// of its message and again on a next: line (problem.Text says it once, on
// every front).
func saidOnce(t *testing.T, got string) {
	t.Helper()
	if i := strings.LastIndex(got, "\nnext: "); i >= 0 {
		if next := strings.TrimSpace(got[i+len("\nnext: "):]); strings.Contains(got[:i], next) {
			t.Errorf("the next step is said twice:\n%s", got)
		}
	}
	if strings.Count(got, "next: ") > 1 {
		t.Errorf("more than one next: line:\n%s", got)
	}
}

// TestCredentialNeverInResult: the credential is read from the variable
// the server was started with; a file that contains it is refused (by the
// parser when it has a credential's shape, by the exact-echo check when it
// does not), and the value appears nowhere in what the client receives.
func TestCredentialNeverInResult(t *testing.T) {
	tests := []struct {
		name, secret, want string
	}{
		{"credential-shaped", "sk-" + "proj-" + strings.Repeat("Zq7", 16), "KMX9001"},
		{"exact echo of an unshaped value", "plainvalue" + strings.Repeat("Qx", 12), "contains the endpoint credential"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "leaky.agent.md")
			body := "---\nname: leaky\n---\nYou answer. The key is " + tc.secret + "\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - contains: hi\n```\n"
			if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			cs := connect(t, mcpserver.Config{
				Version:  "test",
				Endpoint: "https://models.example.invalid/v1",
				KeyEnv:   "KMX_MCP_TEST_KEY",
				Getenv:   envWith(map[string]string{"KMX_HOME": testutil.PrivateDir(t), "KMX_MCP_TEST_KEY": tc.secret}),
			})
			for _, tool := range []string{"Run", "Test"} {
				res := call(t, cs, tool, map[string]any{"file": file, "model": "some-model"})
				if !res.IsError || !strings.Contains(text(res), tc.want) {
					t.Errorf("%s: a file holding the credential was not refused for it: %s", tool, text(res))
				}
				wire, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(wire, []byte(tc.secret[:16])) {
					t.Errorf("%s: the credential value is in the result", tool)
				}
			}
		})
	}
}

// TestFakeStaysOfflineWithStartupEndpoint: a server started with an
// endpoint still runs the fake model when the call asks for it, without
// sending anything to the endpoint (nothing listens there).
func TestFakeStaysOfflineWithStartupEndpoint(t *testing.T) {
	tests := []struct {
		name      string
		args      map[string]any
		wantError bool
		want      string
	}{
		{"model argument fake", map[string]any{"model": "fake"}, false, "verdict pass"},
		// The startup endpoint is standing configuration: a file's own
		// model: fake stays offline too (invocation.Options.StandingRoutes).
		{"file model fake, no argument", map[string]any{}, false, "verdict pass"},
	}
	cs := connect(t, mcpserver.Config{
		Version:  "test",
		Endpoint: "http://127.0.0.1:9/v1",
		Getenv:   envWith(map[string]string{"KMX_HOME": testutil.PrivateDir(t)}),
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.args["file"] = fixture(t, "pass.agent.md")
			res := call(t, cs, "Test", tc.args)
			if res.IsError != tc.wantError || !strings.Contains(text(res), tc.want) {
				t.Errorf("isError=%v, text:\n%s\nwant isError=%v and %q", res.IsError, text(res), tc.wantError, tc.want)
			}
		})
	}
}

func TestCheckLoopback(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"127.0.0.1:8080", true},
		{"[::1]:0", true},
		{"127.1.2.3:0", true},
		{"0.0.0.0:0", false},
		{"[::]:0", false},
		{"localhost:0", false},
		{"192.168.1.10:0", false},
		{":0", false},
		{"127.0.0.1", false},
		{"", false},
	}
	for _, tc := range tests {
		err := mcpserver.CheckLoopback(tc.addr)
		if (err == nil) != tc.ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
}
