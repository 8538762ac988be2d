package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wrongFixAdd copies the fix-add demo with its directive changed to a wrong
// edit (a * b), so the example fails.
func wrongFixAdd(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "..", "testdata", "demo")
	for _, rel := range []string{"fixtures/calc/README.md", "fixtures/calc/calc/add.go", "fixtures/calc/calc/add_test.go", "fix-add.agent.md"} {
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		if rel == "fix-add.agent.md" {
			b = []byte(strings.Replace(string(b), "with `return a + b`", "with `return a * b`", 1))
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "fix-add.agent.md")
}

// A failing workspace example: the text output names the changed paths;
// --show-content adds the diff; JSON and JUnit carry paths and counts
// only, never the file's content.
func TestCLIShowsAFailingExamplesWorkspace(t *testing.T) {
	h := home(t)
	file := wrongFixAdd(t)
	r := kmx(t, h, "test", file)
	if r.code != 1 || !strings.Contains(r.stdout, "workspace: fixtures/calc · 1 changed: calc/add.go (modified)") || strings.Contains(r.stdout, "return a * b") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = kmx(t, h, "test", file, "--show-content")
	for _, want := range []string{"--- a/calc/add.go", "+++ b/calc/add.go", "-\treturn a - b", "+\treturn a * b"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--show-content output lacks %q:\n%s", want, r.stdout)
		}
	}
	junit := filepath.Join(t.TempDir(), "out.xml")
	r = kmx(t, h, "test", file, "--json", "--junit", junit)
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`name="workspace" value="fixtures/calc"`, `name="workspaceChanged" value="added=0 modified=1 deleted=0"`, `name="workspaceFile" value="modified=calc/add.go"`} {
		if !strings.Contains(string(x), want) {
			t.Errorf("JUnit lacks %s", want)
		}
	}
	var rep struct {
		Examples []struct {
			Workspace struct {
				Fixture string `json:"fixture"`
				Changed []struct{ Path, Kind string }
			} `json:"workspace"`
		} `json:"examples"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Examples) != 1 || rep.Examples[0].Workspace.Changed[0].Path != "calc/add.go" {
		t.Fatalf("JSON report = %v (%v)", r.stdout, err)
	}
	if strings.Contains(r.stdout+string(x), "a * b") || strings.Contains(r.stdout+string(x), "a - b") {
		t.Error("file content reached the JSON or JUnit report")
	}
	// --keep-workspace keeps the copy, under the state folder, and names it.
	r = kmx(t, h, "test", file, "--keep-workspace")
	i := strings.Index(r.stdout, "workspace kept: ")
	if i < 0 {
		t.Fatalf("no kept workspace named:\n%s", r.stdout)
	}
	kept := strings.TrimSpace(strings.SplitN(r.stdout[i+len("workspace kept: "):], "\n", 2)[0])
	if b, err := os.ReadFile(filepath.Join(kept, "calc", "add.go")); err != nil || !strings.Contains(string(b), "a * b") || !strings.HasPrefix(kept, h) {
		t.Fatalf("kept %q: %q %v", kept, b, err)
	}
}

// kmx run shows content: each example's workspace changes as diffs, even
// when it passes; --keep-workspace keeps the copy there too.
func TestRunShowsTheWorkspaceDiff(t *testing.T) {
	h := home(t)
	r := kmx(t, h, "run", filepath.Join("..", "..", "..", "testdata", "demo", "fix-add.agent.md"), "--keep-workspace")
	for _, want := range []string{"workspace: fixtures/calc · 1 changed: calc/add.go (modified)", "-\treturn a - b", "+\treturn a + b", "workspace kept: " + h} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("kmx run output lacks %q:\n%s", want, r.stdout)
		}
	}
}
