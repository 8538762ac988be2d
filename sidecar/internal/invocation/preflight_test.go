package invocation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestPreflightShowsRefusalsWhereTheyArise: what Run/Test would refuse is a
// diagnostic on the causing line, in the runner's words, with nothing
// created and nothing sent.
func TestPreflightShowsRefusalsWhereTheyArise(t *testing.T) {
	const examples = "\n## Examples\n\n```yaml\n- id: one\n  input: hi\n  assert:\n"
	cases := []struct {
		name     string
		body     string
		opts     Options
		wantLine int // -1: no diagnostic
		wantMsg  string
		kmxYAML  string // written beside the file when set
		wantCode string // "": CodeRefusal
	}{
		{"fake model runs", "---\nmodel: fake\n---\nSay ok.\n" + examples + "    - contains: ok\n```\n", Options{}, -1, "", "", ""},
		{"non-fake model without an endpoint", "---\ndescription: d\nmodel: llama3\n---\nSay ok.\n" + examples + "    - contains: ok\n```\n", Options{}, 2, "needs an OpenAI-compatible endpoint", "", ""},
		{"default model without an endpoint", "Say ok.\n" + examples + "    - contains: ok\n```\n", Options{}, 0, "names no model, so kmx has none to send", "", ""},
		{"fake with an endpoint given for this run", "---\nmodel: fake\n---\nSay ok.\n" + examples + "    - contains: ok\n```\n", Options{Endpoint: "http://127.0.0.1:11434/v1"}, 1, "cannot be combined with an endpoint", "", ""},
		{"llmJudge without a judge route", "---\nmodel: fake\n---\nSay ok.\n" + examples + "    - llmJudge:\n        rubric: says `ok`\n        judgeModel: gpt-judge\n```\n", Options{}, 11, "llmJudge needs a judge", "", ""},
		// A tool assertion on a file that declares no tools is already a
		// parse Error on its line (KMX3006), so nothing is added.
		{"a tool assertion on a file that declares no tools", "---\nmodel: fake\n---\nSay ok.\n" + examples + "    - toolCalled: ping\n```\n", Options{}, -1, "", "", ""},
		{"the fake would call a tool the file does not declare", "---\nmodel: fake\n---\nSay ok.\nCall the tool `ping`\n" + examples + "    - contains: ok\n```\n", Options{}, 4, "which the agent file does not declare", "", ""},
		{"a Disabled tool the fake would call is answered offline", "---\nmodel: fake\ntools: [ping]\n---\nCall the tool `ping`\n" + examples + "    - toolCalled: ping\n```\n", Options{}, -1, "", "tools:\n  ping: Disabled\n", ""},
		{"an invalid kmx.yaml", "---\nmodel: fake\ntools: [ping]\n---\nCall the tool `ping`\n" + examples + "    - toolCalled: ping\n```\n", Options{}, 2, "kmx.yaml cannot be used", "tools:\n  ping: Ask\n", CodeSettings},
		{"tools on an endpoint run there", "---\nmodel: llama3\ntools: [ping]\n---\nSay ok.\n" + examples + "    - contains: ok\n```\n", Options{Endpoint: "http://127.0.0.1:11434/v1"}, -1, "", "", ""},
		{"a workspace on a file that declares no tools", "---\nmodel: fake\n---\nSay ok.\n" + examples + "    - fileUnchanged: a.go\n  workspace: fx\n```\n", Options{}, 12, "declares no tools: nothing could read or edit it", "", ""},
		{"a workspace that is not there", "---\nmodel: fake\ntools: [read]\n---\nSay ok.\n" + examples + "    - fileUnchanged: a.go\n  workspace: fx\n```\n", Options{}, 13, "fx", "", ""},
		{"a file-wide workspace too", "---\nmodel: fake\n---\nSay ok.\n\n## Examples\n\n```yaml\n- workspace: fx\n- id: one\n  input: hi\n```\n", Options{}, 8, "declares no tools", "", ""},
		{"the fake would edit a workspace", "---\nmodel: fake\n---\nReplace `a` with `b` in `x.go`\n" + examples + "    - contains: ok\n```\n", Options{}, 3, `but example "one" has none`, "", ""},
		{"an invalid file has its parse diagnostics instead", "---\nmodel: llama3\n---\nSay ok.\n" + examples + "    - containz: ok\n```\n", Options{}, -1, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := testutil.PrivateDir(t)
			tc.opts.StateDir = home
			dir := t.TempDir()
			path := filepath.Join(dir, "a.agent.md")
			if tc.kmxYAML != "" {
				if err := os.WriteFile(filepath.Join(dir, "kmx.yaml"), []byte(tc.kmxYAML), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			src := []byte(tc.body)
			got := Preflight(context.Background(), tc.opts, path, src, agentfile.Parse(path, src))
			if tc.wantLine < 0 {
				if len(got) != 0 {
					t.Fatalf("want no diagnostic, got %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one diagnostic, got %+v", got)
			}
			d := got[0]
			if tc.wantCode == "" {
				tc.wantCode = CodeRefusal
			}
			if d.Code != tc.wantCode || d.Range.Start.Line != tc.wantLine || !strings.Contains(d.Message, tc.wantMsg) || d.Severity != agentfile.SeverityWarning {
				t.Fatalf("diagnostic %+v, want line %d saying %q", d, tc.wantLine, tc.wantMsg)
			}
			if entries, _ := os.ReadDir(home); len(entries) != 0 {
				t.Errorf("Preflight created %d entries in the state folder", len(entries))
			}
		})
	}
}
