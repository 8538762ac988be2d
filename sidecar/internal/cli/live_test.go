//go:build kmxtest

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/ghread/ghreadtest"
)

// TestCLICapturesAPendingRecording: kmx test --tool-bindings runs a
// pending recording live against the owned fixture, saves it and says so
// (with the new revision); the second kmx test reads no network.
func TestCLICapturesAPendingRecording(t *testing.T) {
	const repo = "octo-org/Hello-World"
	f := ghreadtest.Use(t, ghreadtest.Options{Items: []ghreadtest.Item{{Number: 7, Title: "Add the tool harness", Repository: repo, Merged: true}}})
	h := home(t)
	body := "---\ntools: [github_list_merged_prs]\n---\nList what was merged.\n\nCall the tool `github_list_merged_prs`\n\n## Examples\n\n```yaml\n" +
		"- id: weekly\n  input: What was merged?\n  tools:\n    github_list_merged_prs:\n      recorded:\n        calls: []\n  assert:\n    - contains: \"Add the tool harness\"\n```\n"
	p := writeAgent(t, body)
	bindings := filepath.Join(filepath.Dir(p), "tools.json")
	if err := os.WriteFile(bindings, []byte(`{"schemaVersion": "kmx.local-tools/v1", "bindings": [{"name": "github_list_merged_prs", "endpointRef": "github-mcp", "repository": "`+repo+`"}], "endpoints": {"github-mcp": {"url": "https://api.githubcopilot.com/mcp/readonly", "credentialEnv": "KMX_TEST_GH"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func() result {
		var out, errb bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			switch k {
			case "KMX_HOME":
				return h
			case "KMX_TEST_GH":
				return "fixture-credential-value-4242"
			}
			return ""
		}}
		code := Main(context.Background(), []string{"test", p, "--model", "fake", "--tool-bindings", bindings}, env)
		return result{code, out.String(), errb.String()}
	}
	r := run()
	if r.code != 0 || !strings.Contains(r.stdout, "tools: 1 call: github_list_merged_prs (live)") || !strings.Contains(r.stdout, "captured weekly/github_list_merged_prs into "+p) {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	saved, _ := os.ReadFile(p)
	if !strings.Contains(string(saved), `calls: [{"arguments": {}, "result": {"repository":"octo-org/Hello-World","pullRequests":[{"number":7,"title":"Add the tool harness"}]}}]`) {
		t.Fatalf("saved file:\n%s", saved)
	}
	before := f.Requests()
	r = run()
	if r.code != 0 || !strings.Contains(r.stdout, "(recorded)") || strings.Contains(r.stdout, "captured") || f.Requests() != before {
		t.Fatalf("second run: exit %d, fixture requests %d -> %d\n%s", r.code, before, f.Requests(), r.stdout)
	}
}
