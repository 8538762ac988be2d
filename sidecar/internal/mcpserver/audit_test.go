package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/failures"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/mcpserver"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// A command line flag (--model) or a kmx command (kmx test FILE) in what
// an MCP client reads. kmx mcp itself may be named: it is the server the
// user configures (its roots, its startup settings); "kmx version" is
// prose ("from another kmx version"), never a step.
var (
	flagWords    = regexp.MustCompile(`--[a-z]`)
	commandWords = regexp.MustCompile(`\bkmx (chat|check|journal|lsp|run|test)\b`)
)

// TestNoFlagOrCommandReachesAnMCPClient (issue 31 items 9, 13, 15): every
// message an MCP client receives, in the text, the structured result and
// the refused report alike, names MCP's tools and arguments and the
// server's startup settings, never a command line flag or a kmx command.
// Each case drives one path whose message used to name them: the fake
// model's placeholder verdict, a file with errors, a comparison's refused
// columns, a baseline outside git, a re-grade's refused example and its
// offline judge, a re-grade of no run or of a damaged journal, unreadable
// retained failures, a reply naming another
// model, the endpoint and credential settings, the invocation bound and a
// tool binding without its credential.
func TestNoFlagOrCommandReachesAnMCPClient(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	examples := "\n\n## Examples\n\n```yaml\n- id: greet\n  input: Hi\n  assert:\n    - contains: hello\n```\n"
	placeholder := write("placeholder.agent.md", "---\nname: placeholder\nmodel: fake\n---\nBe kind."+examples)
	greeter := write("greeter.agent.md", "---\nname: greeter\nmodel: fake\n---\nReply with exactly `hello`."+examples)
	failing := write("failing.agent.md", "---\nname: failing\nmodel: fake\n---\nReply with exactly `bye`."+examples)
	broken := write("broken.agent.md", "---\nname: broken\nmodel: fake\n---\nHi.\n\n## Examples\n\n```yaml\n- id: greet\n  input: Hi\n  assert:\n    - containz: hello\n```\n")
	onEndpoint := write("endpoint.agent.md", "---\nname: endpoint\nmodel: asked-model\n---\nReply hello."+examples)
	wrongModel := write("wrong.agent.md", "---\nname: wrong\nmodel: wrong-model\n---\nReply hello."+examples)
	judged := func(rubric string) string {
		return "---\nname: judged\nmodel: asked-model\n---\nReply hello.\n\n## Examples\n\n```yaml\n- id: greet\n  input: Hi\n  assert:\n    - llmJudge:\n        rubric: " + rubric + "\n```\n"
	}
	judgedFile := write("judged.agent.md", judged("The answer greets."))
	tool := write("tool.agent.md", "---\nname: tool\nmodel: fake\ntools: [github_list_merged_prs]\n---\nList what was merged.\n\nCall the tool `github_list_merged_prs`\n\n## Examples\n\n```yaml\n"+
		"- id: weekly\n  input: What was merged?\n  assert:\n    - contains: merged\n```\n")

	// An OpenAI-compatible endpoint on 127.0.0.1: it answers hello, a
	// judge sample with a score, and a request for wrong-model under
	// another model's name.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		model, content := req.Model, "hello"
		if model == "wrong-model" {
			model = "other-model"
		}
		if len(req.Messages) > 0 && req.Messages[0].Content == judge.Instructions {
			content = `{"score": 90, "reasoning": "it greets"}`
		}
		reply, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	}))
	t.Cleanup(srv.Close)

	home := testutil.PrivateDir(t)
	env := envWith(map[string]string{"KMX_HOME": home})
	plain := connect(t, mcpserver.Config{Version: "test", Getenv: env})
	endpoint := connect(t, mcpserver.Config{Version: "test", Getenv: env, Endpoint: srv.URL + "/v1"})

	var greeterRun, judgedRun runner.Report
	decode(t, call(t, plain, "Test", map[string]any{"file": greeter}), &greeterRun)
	judgedRes := call(t, endpoint, "Test", map[string]any{"file": judgedFile})
	decode(t, judgedRes, &judgedRun)
	if greeterRun.RunID == "" || judgedRun.Verdict != runner.VerdictPass {
		t.Fatalf("the source runs: %q, %s:\n%s", greeterRun.RunID, judgedRun.Verdict, text(judgedRes))
	}
	// A re-grade of a changed file: the greeter's instructions, the judged
	// file's rubric (a fresh judge sample, with no endpoint to send it).
	write("greeter.agent.md", "---\nname: greeter\nmodel: fake\n---\nReply with exactly `hello`, please."+examples)
	write("judged.agent.md", judged("The answer greets warmly."))
	// Retained failures none of which can be read.
	call(t, plain, "Test", map[string]any{"file": failing})
	subject, err := failures.Subject(failing)
	if err != nil {
		t.Fatal(err)
	}
	records, _ := filepath.Glob(filepath.Join(failures.RecordsDir(home, subject), "*.json"))
	if len(records) == 0 {
		t.Fatalf("no retained failure record for %s", failing)
	}
	for _, r := range records {
		if err := os.WriteFile(r, []byte("not a record"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// A journal that cannot be read, under a valid run ID.
	const damagedRun = "20261205T000000.000000000Z-0badf00d"
	if err := os.WriteFile(filepath.Join(home, "local-preview", "journals", damagedRun+".db"), []byte("not a journal"), 0o600); err != nil {
		t.Fatal(err)
	}

	blocked := func(*journal.Journal, *invocation.Plan) (runner.Executor, func(), error) {
		return blockingExecutor{}, func() {}, nil
	}
	binding := &localtools.Binding{Path: "tools.json", Name: localtools.GitHubTool, Repository: "octo-org/Hello-World",
		URL: localtools.GitHubMCPURL, CredentialEnv: "KMX_AUDIT_GH"}

	tests := []struct {
		name string
		cfg  *mcpserver.Config // nil: the plain server
		tool string
		args map[string]any
		want string // a part of the text that shows the path was taken
	}{
		{"the fake model's placeholder answer", nil, "Test", map[string]any{"file": placeholder}, "placeholder answer proves nothing"},
		{"a Run's summary", nil, "Run", map[string]any{"file": placeholder, "input": "Hi"}, "verdict answered"},
		{"a file with errors", nil, "Test", map[string]any{"file": broken}, "has 1 error(s)"},
		{"a comparison's refused columns", nil, "Test", map[string]any{"file": onEndpoint, "models": []string{"first-model", "second-model"}}, "refused, nothing ran"},
		{"a baseline outside git", nil, "Test", map[string]any{"file": greeter, "baseline": "HEAD~1"}, "not inside a git work tree"},
		{"a re-grade of changed instructions", nil, "Test", map[string]any{"file": greeter, "fromRun": greeterRun.RunID}, "not re-graded: the instructions changed"},
		{"a re-grade that needs a fresh judge sample", nil, "Test", map[string]any{"file": judgedFile, "fromRun": judgedRun.RunID}, "has no endpoint in this re-grade"},
		{"retained failures none of which can be read", nil, "Explain", map[string]any{"file": failing}, "none can be read"},
		{"a re-grade of no run ID", nil, "Test", map[string]any{"file": greeter, "fromRun": "last"}, "is not a run ID"},
		{"a re-grade of a damaged journal", nil, "Test", map[string]any{"file": greeter, "fromRun": damagedRun}, "cannot be read"},
		{"a reply naming another model", &mcpserver.Config{Endpoint: srv.URL + "/v1"}, "Test", map[string]any{"file": wrongModel}, `it named "other-model"`},
		{"a credential variable over plain http", &mcpserver.Config{Endpoint: srv.URL + "/v1", KeyEnv: "KMX_AUDIT_KEY"}, "Test", map[string]any{"file": onEndpoint}, "a credential is sent only over https://"},
		{"a credential variable that is not set", &mcpserver.Config{Endpoint: "https://127.0.0.1:9/v1", KeyEnv: "KMX_AUDIT_KEY"}, "Test", map[string]any{"file": onEndpoint}, "KMX_AUDIT_KEY is not set"},
		{"a credential in the endpoint", &mcpserver.Config{Endpoint: "https://127.0.0.1:9/v1/sk-" + "proj-" + strings.Repeat("Zq7", 16)}, "Test", map[string]any{"file": onEndpoint}, "credential"},
		{"a credential variable without an endpoint", &mcpserver.Config{KeyEnv: "KMX_AUDIT_KEY"}, "Test", map[string]any{"file": onEndpoint}, "names the credential of"},
		{"a judge credential variable without a judge endpoint", &mcpserver.Config{JudgeKeyEnv: "KMX_AUDIT_KEY"}, "Test", map[string]any{"file": onEndpoint}, "names the credential of"},
		{"the invocation bound", &mcpserver.Config{InvocationBound: time.Second, NewExecutor: blocked}, "Test", map[string]any{"file": greeter}, "invocation bound (1s"},
		{"a tool binding without its credential", &mcpserver.Config{ToolBinding: binding}, "Test", map[string]any{"file": tool}, "KMX_AUDIT_GH is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := plain
			if tc.cfg != nil {
				cfg := *tc.cfg
				cfg.Version, cfg.Getenv = "test", env
				cs = connect(t, cfg)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatalf("protocol error: %v", err)
			}
			got := text(res)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("this path was not taken: the text lacks %q:\n%s", tc.want, got)
			}
			structured, err := json.Marshal(res.StructuredContent)
			if err != nil {
				t.Fatal(err)
			}
			for what, s := range map[string]string{"text": got, "structured content": string(structured)} {
				if m := flagWords.FindString(s); m != "" {
					t.Errorf("the %s names a command line flag (%q):\n%s", what, m, s)
				}
				if m := commandWords.FindString(s); m != "" {
					t.Errorf("the %s names a kmx command (%q):\n%s", what, m, s)
				}
			}
		})
	}
}

// blockingExecutor answers no turn: each waits until its context ends (the
// invocation bound), as a model that never replies.
type blockingExecutor struct{}

func (blockingExecutor) Execute(ctx context.Context, _ runner.Turn) (runner.Outcome, error) {
	<-ctx.Done()
	return runner.Outcome{Journaled: true, Cancelled: true, Problem: "cancelled"}, nil
}
