//go:build kmxtest

package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/ghread/ghreadtest"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/mcpserver"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestCaptureThroughMCP: through a real MCP client, a kmx mcp started with
// --tool-bindings runs a pending recording live against the owned fixture,
// saves the capture into the agent file once, and the next Test runs
// offline from the recording with zero network calls.
func TestCaptureThroughMCP(t *testing.T) {
	const repo = "octo-org/Hello-World"
	f := ghreadtest.Use(t, ghreadtest.Options{Items: []ghreadtest.Item{
		{Number: 7, Title: "Add the tool harness", Repository: repo, Merged: true},
		{Number: 8, Title: "Still open", Repository: repo},
	}})
	home := testutil.PrivateDir(t)
	binding := &localtools.Binding{Path: "tools.json", Name: localtools.GitHubTool, Repository: repo,
		URL: localtools.GitHubMCPURL, CredentialEnv: "KMX_TEST_GH"}
	cs := connect(t, mcpserver.Config{Version: "test", ToolBinding: binding,
		Getenv: envWith(map[string]string{"KMX_HOME": home, "KMX_TEST_GH": "fixture-credential-value-4242"})})

	body := "---\nmodel: fake\ntools: [github_list_merged_prs]\n---\nList what was merged.\n\nCall the tool `github_list_merged_prs`\n\n## Examples\n\n```yaml\n" +
		"- id: weekly\n  input: What was merged?\n  tools:\n    github_list_merged_prs:\n      recorded:\n        calls: []\n  assert:\n    - contains: \"Add the tool harness\"\n```\n"
	path := filepath.Join(t.TempDir(), "merged.agent.md")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}

	var rep runner.Report
	res := call(t, cs, "Test", map[string]any{"file": path})
	decode(t, res, &rep)
	if rep.Verdict != runner.VerdictPass || rep.Capture == nil || rep.Capture.Status != runner.CaptureSaved {
		t.Fatalf("Test = %s, capture %+v: %s", rep.Verdict, rep.Capture, text(res))
	}
	if src := rep.Examples[0].ToolSources; len(src) != 1 || src[0].Source != localtools.SourceLive {
		t.Errorf("sources %+v, want live", src)
	}
	if !strings.Contains(text(res), "captured 1 pending recording") {
		t.Errorf("the text result does not say what was captured: %s", text(res))
	}
	saved, _ := os.ReadFile(path)
	want := strings.Replace(body, "calls: []", `calls: [{"arguments": {}, "result": {"repository":"octo-org/Hello-World","pullRequests":[{"number":7,"title":"Add the tool harness"}]}}]`, 1)
	if string(saved) != want {
		t.Fatalf("saved file:\n%s", saved)
	}

	before := f.Requests()
	var again runner.Report
	decode(t, call(t, cs, "Test", map[string]any{"file": path}), &again)
	if again.Verdict != runner.VerdictPass || again.Capture != nil || f.Requests() != before {
		t.Fatalf("second Test = %s, capture %+v, fixture requests %d -> %d", again.Verdict, again.Capture, before, f.Requests())
	}
	if src := again.Examples[0].ToolSources; len(src) != 1 || src[0].Source != localtools.SourceRecorded {
		t.Errorf("offline sources %+v, want recorded", src)
	}
	if now, _ := os.ReadFile(path); string(now) != want {
		t.Error("the capture was written twice")
	}
}
