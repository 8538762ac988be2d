package localpreview

import (
	"context"
	"os"
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
	}{
		{"fake model runs", "---\nmodel: fake\n---\nSay ok.\n" + examples + "    - contains: ok\n```\n", Options{}, -1, ""},
		{"non-fake model without an endpoint", "---\ndescription: d\nmodel: llama3\n---\nSay ok.\n" + examples + "    - contains: ok\n```\n", Options{}, 2, "needs an OpenAI-compatible endpoint"},
		{"default model without an endpoint", "Say ok.\n" + examples + "    - contains: ok\n```\n", Options{}, 0, DefaultModel},
		{"fake with an endpoint given for this run", "---\nmodel: fake\n---\nSay ok.\n" + examples + "    - contains: ok\n```\n", Options{Endpoint: "http://127.0.0.1:11434/v1"}, 1, "cannot be combined with an endpoint"},
		{"llmJudge without a judge route", "---\nmodel: fake\n---\nSay ok.\n" + examples + "    - llmJudge:\n        rubric: says `ok`\n        judgeModel: gpt-judge\n```\n", Options{}, 11, "llmJudge needs a judge"},
		{"an invalid file has its parse diagnostics instead", "---\nmodel: llama3\n---\nSay ok.\n" + examples + "    - containz: ok\n```\n", Options{}, -1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := testutil.PrivateDir(t)
			tc.opts.StateDir = home
			src := []byte(tc.body)
			got := Preflight(context.Background(), tc.opts, "/x/a.agent.md", src, agentfile.Parse("/x/a.agent.md", src))
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
			if d.Code != CodeRefusal || d.Range.Start.Line != tc.wantLine || !strings.Contains(d.Message, tc.wantMsg) || d.Severity != agentfile.SeverityWarning {
				t.Fatalf("diagnostic %+v, want line %d saying %q", d, tc.wantLine, tc.wantMsg)
			}
			if entries, _ := os.ReadDir(home); len(entries) != 0 {
				t.Errorf("Preflight created %d entries in the state folder", len(entries))
			}
		})
	}
}
