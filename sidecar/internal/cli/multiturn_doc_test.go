package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docMultiTurnExample is the complete multi-turn example docs/agent-file.md
// shows (the ````markdown block naming "Merged PRs").
func docMultiTurnExample(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "agent-file.md"))
	if err != nil {
		t.Fatal(err)
	}
	const open = "````markdown\n---\nname: Merged PRs\n"
	_, rest, ok := strings.Cut(string(doc), open)
	body, _, closed := strings.Cut(rest, "\n````\n")
	if !ok || !closed {
		t.Fatal("docs/agent-file.md has no complete ````markdown block for the Merged PRs example")
	}
	return "---\nname: Merged PRs\n" + body + "\n"
}

// The documented multi-turn example is valid with no warning and passes on
// the fake model, every turn journaled and replay-verified with its usage;
// broken in its first turn, the first turn fails and the second is not run.
func TestDocMultiTurnExamplePasses(t *testing.T) {
	h := home(t)
	text := docMultiTurnExample(t)
	path := filepath.Join(t.TempDir(), "merged.agent.md")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := kmx(t, h, "check", path); r.code != 0 || strings.Contains(r.stdout+r.stderr, "warning") {
		t.Fatalf("kmx check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	type turn struct {
		Turn     int    `json:"turn"`
		Verdict  string `json:"verdict"`
		Verified bool   `json:"verified"`
		Usage    *struct {
			TotalTokens int `json:"totalTokens"`
		} `json:"usage"`
	}
	var rep struct {
		Verdict  string `json:"verdict"`
		Examples []struct {
			Verdict string `json:"verdict"`
			Turns   []turn `json:"turns"`
		} `json:"examples"`
	}
	run := func(p string, code int) {
		t.Helper()
		r := kmx(t, h, "test", p, "--json")
		if r.code != code {
			t.Fatalf("kmx test %s: exit %d, want %d\n%s%s", p, r.code, code, r.stdout, r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Examples) != 1 || len(rep.Examples[0].Turns) != 2 {
			t.Fatalf("report: %v\n%s", err, r.stdout)
		}
	}
	run(path, 0)
	for _, tr := range rep.Examples[0].Turns {
		if tr.Verdict != "pass" || !tr.Verified || tr.Usage == nil || tr.Usage.TotalTokens == 0 {
			t.Fatalf("turn %d: %+v; want a verified pass with usage", tr.Turn, tr)
		}
	}

	broken := strings.Replace(text, "- contains: Fix the parser", "- contains: Fix the lexer", 1)
	if broken == text {
		t.Fatal("the documented example no longer checks `contains: Fix the parser` in its first turn")
	}
	bpath := filepath.Join(t.TempDir(), "broken.agent.md")
	if err := os.WriteFile(bpath, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	run(bpath, 1)
	if ex := rep.Examples[0]; ex.Verdict != "fail" || ex.Turns[0].Verdict != "fail" || ex.Turns[1].Verdict != "not run" {
		t.Fatalf("broken example: %+v; want turn 1 fail, turn 2 not run", ex)
	}
}
