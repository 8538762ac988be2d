package mcpserver_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/compare"
	"github.com/kmxdev/kmx/sidecar/internal/mcpserver"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// testResult is the Test tool's structured result with a comparison.
type testResult struct {
	runner.Report
	Comparison *compare.Result `json:"comparison"`
}

// TestTestToolModelsAndBaseline: Test with models runs each model as its
// own run (a model the server has no endpoint for is a refused column, not
// a refused call), with baseline it compares with the instructions at a
// git revision of a repository inside the roots, and a plain Test keeps
// its report without a comparison.
func TestTestToolModelsAndBaseline(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("this test needs git on PATH: %v", err)
	}
	repo := t.TempDir()
	gitHome := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+gitHome, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	agent := func(prefix string) string {
		return "---\nmodel: fake\n---\nReply with exactly `" + prefix + "` followed by the input\n\n## Examples\n\n```yaml\n- id: weekly\n  input: this week\n  assert:\n    - contains: \"Release notes:\"\n```\n"
	}
	file := filepath.Join(repo, "notes.agent.md")
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(file, []byte(agent("Release notes:")), 0o600); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-q", "-m", "passing")
	if err := os.WriteFile(file, []byte(agent("Notes:")), 0o600); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, mcpserver.Config{Version: "test", Roots: []string{real}, ExplicitRoots: true, Getenv: envWith(map[string]string{"KMX_HOME": testutil.PrivateDir(t)})})

	res := call(t, cs, "Test", map[string]any{"file": file, "models": []string{"fake", "no-endpoint-model"}})
	if res.IsError {
		t.Fatalf("models: %s", text(res))
	}
	var got testResult
	decode(t, res, &got)
	c := got.Comparison
	if c == nil || len(c.Columns) != 2 || c.Columns[0].RunID == "" || c.Columns[1].Refusal == nil || c.Verdict != "refused" || got.Verdict != "refused" {
		t.Fatalf("models: %+v / report verdict %s", c, got.Verdict)
	}
	if !strings.Contains(text(res), "on 2 models") {
		t.Errorf("models text: %s", text(res))
	}

	res = call(t, cs, "Test", map[string]any{"file": file, "baseline": "HEAD"})
	if res.IsError {
		t.Fatalf("baseline: %s", text(res))
	}
	got = testResult{}
	decode(t, res, &got)
	if c := got.Comparison; c == nil || c.Changes == nil || c.Changes.Regressed != 1 || c.Rows[0].Changes[0].Change != compare.Regressed {
		t.Fatalf("baseline: %+v", got.Comparison)
	}

	outside := call(t, cs, "Test", map[string]any{"file": fixtureIn(t, real), "baseline": "no-such-rev"})
	if !outside.IsError || !strings.Contains(text(outside), "git knows no commit no-such-rev") {
		t.Errorf("unknown revision: %v %s", outside.IsError, text(outside))
	}
	both := call(t, cs, "Test", map[string]any{"file": file, "model": "fake", "models": []string{"fake"}})
	if !both.IsError || !strings.Contains(text(both), "model or models") {
		t.Errorf("model and models: %v %s", both.IsError, text(both))
	}

	many := []string{"fake"}
	for i := range runner.MaxCompareModels {
		many = append(many, fmt.Sprintf("m%d", i))
	}
	tooMany := call(t, cs, "Test", map[string]any{"file": file, "models": many})
	if !tooMany.IsError || !strings.Contains(text(tooMany), "compare at most 8 models") {
		t.Errorf("%d models: %v %s", len(many), tooMany.IsError, text(tooMany))
	}

	plain := call(t, cs, "Test", map[string]any{"file": file})
	got = testResult{}
	decode(t, plain, &got)
	if got.Comparison != nil || got.Verdict != "fail" || got.RunID == "" {
		t.Errorf("plain Test: comparison %v verdict %s", got.Comparison, got.Verdict)
	}
}

// fixtureIn is an agent file inside root, for a refusal that must come
// before anything runs.
func fixtureIn(t *testing.T, root string) string {
	t.Helper()
	p := filepath.Join(root, "other.agent.md")
	if err := os.WriteFile(p, []byte("Reply with exactly `x`.\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - contains: x\n```\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
