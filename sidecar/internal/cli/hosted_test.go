package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostedMCPWithScriptedModelJournal is the opt-in end-to-end read from
// GitHub's hosted read-only MCP server: kmx test with a --tool-bindings
// binding, the scripted fake model calling github_list_merged_prs, the call
// answered live and journaled; then kmx journal inspect replays the run
// offline with no binding and no credential, and zero model or tool calls.
// It prints counts only, never PR content, and its journal lives in a
// private temporary folder removed when the test ends. It is not real-LLM
// tool-selection qualification (the model is scripted).
//
//	KMX_LIVE_GITHUB_TOKEN_ENV=GITHUB_MCP_TOKEN KMX_LIVE_GITHUB_REPOSITORY=owner/repo \
//	  go test -count=1 -run TestHostedMCPWithScriptedModelJournal ./sidecar/internal/cli/
func TestHostedMCPWithScriptedModelJournal(t *testing.T) {
	tokenEnv, repository := os.Getenv("KMX_LIVE_GITHUB_TOKEN_ENV"), os.Getenv("KMX_LIVE_GITHUB_REPOSITORY")
	if tokenEnv == "" || repository == "" {
		t.Skip("opt-in: set KMX_LIVE_GITHUB_TOKEN_ENV to the name of a variable holding a GitHub token and KMX_LIVE_GITHUB_REPOSITORY to OWNER/REPO (canonical letter case) to read from https://api.githubcopilot.com/mcp/readonly")
	}
	token := os.Getenv(tokenEnv)
	if token == "" {
		t.Fatalf("KMX_LIVE_GITHUB_TOKEN_ENV names %s, which is unset or empty", tokenEnv)
	}
	h := home(t)
	p := writeAgent(t, "---\ntools: [github_list_merged_prs]\n---\nList what was merged.\n\nCall the tool `github_list_merged_prs`\n\n## Examples\n\n```yaml\n"+
		"- id: hosted\n  input: What was merged?\n  assert:\n    - contains: \"pullRequests\"\n```\n")
	bindings := filepath.Join(filepath.Dir(p), "tools.json")
	if err := os.WriteFile(bindings, []byte(`{"schemaVersion": "kmx.local-tools/v1", "bindings": [{"name": "github_list_merged_prs", "endpointRef": "github-mcp", "repository": "`+repository+`"}], "endpoints": {"github-mcp": {"url": "https://api.githubcopilot.com/mcp/readonly", "credentialEnv": "`+tokenEnv+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// run gives kmx only KMX_HOME and, when withToken, the credential.
	run := func(withToken bool, args ...string) (int, []byte) {
		var out, errb bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			switch {
			case k == "KMX_HOME":
				return h
			case withToken && k == tokenEnv:
				return token
			}
			return ""
		}}
		return Main(context.Background(), args, env), out.Bytes()
	}

	code, out := run(true, "test", p, "--model", "fake", "--tool-bindings", bindings, "--json")
	var rep struct {
		RunID    string `json:"runId"`
		Verdict  string `json:"verdict"`
		Examples []struct {
			Verdict     string `json:"verdict"`
			Message     string `json:"message"`
			ToolCalls   int    `json:"toolCalls"`
			ToolSources []struct{ Name, Source string }
		} `json:"examples"`
	}
	// The report holds no tool result or answer, so it may be quoted.
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Examples) != 1 {
		t.Fatalf("kmx test exit %d: no one-example JSON report: %v\n%s", code, err, out)
	}
	ex := rep.Examples[0]
	if code != 0 || rep.Verdict != "pass" || ex.ToolCalls != 1 || len(ex.ToolSources) != 1 || ex.ToolSources[0].Source != "live" {
		t.Fatalf("kmx test exit %d, verdict %s (%s), %d tool calls, sources %+v; want pass with one live call", code, rep.Verdict, ex.Message, ex.ToolCalls, ex.ToolSources)
	}

	code, out = run(false, "journal", "inspect", rep.RunID, "--json")
	var in struct {
		LiveCalls int `json:"liveCalls"`
		Summary   struct {
			Turns, Verified, Incomplete, Failed int
		} `json:"summary"`
	}
	// The inspection holds the answer (PR titles): never print it.
	if err := json.Unmarshal(out, &in); err != nil {
		t.Fatalf("kmx journal inspect exit %d printed no JSON inspection (%d bytes, not shown)", code, len(out))
	}
	if code != 0 || in.LiveCalls != 0 || in.Summary.Turns == 0 || in.Summary.Verified != in.Summary.Turns {
		t.Fatalf("offline replay without a credential: exit %d, %d live calls, %d of %d turns verified", code, in.LiveCalls, in.Summary.Verified, in.Summary.Turns)
	}
	t.Logf("hosted read of %s: one live call journaled; offline replay verified %d turns with 0 model calls (content not printed)", repository, in.Summary.Turns)
}
