package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// userTranscript runs each command line in the state folder h and returns
// what a user sees: the command, its stdout, its stderr (prefixed "! ") and
// its exit code. Folder paths are replaced by their names in dirs (so the
// transcript is the same on every machine), and durations and run IDs are
// normalized.
func userTranscript(t *testing.T, h string, dirs map[string]string, cmds ...[]string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range cmds {
		r := kmx(t, h, args...)
		fmt.Fprintf(&b, "$ kmx %s\n", strings.Join(args, " "))
		b.WriteString(r.stdout)
		for _, line := range strings.SplitAfter(r.stderr, "\n") {
			if line != "" {
				b.WriteString("! " + line)
			}
		}
		fmt.Fprintf(&b, "exit %d\n\n", r.code)
	}
	return scrubPaths(b.String(), h, dirs)
}

// scrubPaths replaces the state folder by $KMX_HOME, each folder in dirs by
// its name, and run IDs, revisions and durations by placeholders.
func scrubPaths(s, h string, dirs map[string]string) string {
	type pair struct{ path, name string }
	var ps []pair
	for name, p := range dirs {
		ps = append(ps, pair{p, name})
	}
	ps = append(ps, pair{h, "$KMX_HOME"})
	// Longest first: a folder inside another is replaced by its own name.
	slices.SortFunc(ps, func(a, b pair) int { return len(b.path) - len(a.path) })
	for _, p := range ps {
		s = strings.ReplaceAll(s, p.path, p.name)
	}
	return normalize(scrubRun(s), nil)
}

// noJournals fails the test when the state folder h holds any run.
func noJournals(t *testing.T, h string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(h, "local-preview", "journals"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("a refused invocation created journal files: %v", names)
	}
}

func fileText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJUnitOverwroteTheAgentUnderTest: `kmx test ci/a.agent.md --junit
// ci/a.agent.md` turned the agent into XML. Every --junit path that is an
// agent file, an examples file, kmx.yaml, a folder, another existing file
// or a folder that does not exist is refused before anything runs, and the
// file is left as it was.
func TestJUnitOverwroteTheAgentUnderTest(t *testing.T) {
	h := home(t)
	ci := agentTree(t, map[string]string{
		"a.agent.md":                passAgent,
		"b.agent.md":                "---\nmodel: fake\n---\nReply with exactly `ok`.\n",
		"b.agent.examples.yaml":     "- id: a\n  input: hi\n  assert:\n    - contains: ok\n",
		"kmx.yaml":                  "tools: {}\n",
		"notes.txt":                 "my notes\n",
		"reports/.keep":             "",
		".github/agents/x.agent.md": passAgent,
	})
	agent := filepath.Join(ci, "a.agent.md")
	var cmds [][]string
	for _, out := range []string{"a.agent.md", "b.agent.examples.yaml", "kmx.yaml", "reports", "notes.txt", "new.agent.md", "missing/out.xml"} {
		cmds = append(cmds, []string{"test", agent, "--junit", filepath.Join(ci, out)})
	}
	before := map[string]string{}
	for _, f := range []string{"a.agent.md", "b.agent.examples.yaml", "kmx.yaml", "notes.txt"} {
		before[f] = fileText(t, filepath.Join(ci, f))
	}
	got := userTranscript(t, h, map[string]string{"ci": ci}, cmds...)
	golden(t, "junit-refused.txt", got)
	for f, text := range before {
		if after := fileText(t, filepath.Join(ci, f)); after != text {
			t.Errorf("%s changed:\n%s", f, after)
		}
	}
	if _, err := os.Stat(filepath.Join(ci, "new.agent.md")); !os.IsNotExist(err) {
		t.Errorf("new.agent.md was created: %v", err)
	}
	noJournals(t, h)
}

// TestJUnitToAFolderThatDoesNotExistIsRefusedFirst: a bad --junit path was
// found only after every example had run. It is refused before a journal
// exists, for one file and for a folder run.
func TestJUnitToAFolderThatDoesNotExistIsRefusedFirst(t *testing.T) {
	h := home(t)
	ci := agentTree(t, map[string]string{"a.agent.md": passAgent, "b.agent.md": failAgent})
	for _, target := range []string{filepath.Join(ci, "a.agent.md"), ci} {
		r := kmx(t, h, "test", target, "--junit", "/nonexistent/dir/out.xml")
		if r.code != ExitRefusal || r.stdout != "" || !strings.Contains(r.stderr, "does not exist") || !strings.Contains(r.stderr, "next: ") {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", target, r.code, r.stdout, r.stderr)
		}
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		r := kmx(t, h, "test", ci, "--junit", filepath.Join(ro, "out.xml"))
		if r.code != ExitRefusal || !strings.Contains(r.stderr, "cannot write") {
			t.Fatalf("read-only folder: exit %d\n%s", r.code, r.stderr)
		}
	}
	noJournals(t, h)
}

// TestJUnitReplacesItsOwnReport: the report kmx wrote (now or by a kmx
// before the marker) is replaced on the next run, by rename, with no
// temporary file left beside it.
func TestJUnitReplacesItsOwnReport(t *testing.T) {
	h := home(t)
	ci := agentTree(t, map[string]string{"a.agent.md": passAgent})
	out := filepath.Join(ci, "junit.xml")
	for i := 0; i < 2; i++ {
		if r := kmx(t, h, "test", filepath.Join(ci, "a.agent.md"), "--junit", out); r.code != ExitOK {
			t.Fatalf("run %d: exit %d %s", i, r.code, r.stderr)
		}
	}
	if text := fileText(t, out); !strings.Contains(text, junitMarker) || !strings.Contains(text, `<testcase name="a"`) {
		t.Fatalf("the report:\n%s", text)
	}
	// A report from a kmx before the marker.
	old := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<testsuites>` + "\n" + `  <testsuite name="a.agent.md" tests="1" failures="0" errors="0" time="0.001">` + "\n" +
		`    <properties>` + "\n" + `      <property name="label" value="local preview"></property>` + "\n"
	if err := os.WriteFile(out, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := kmx(t, h, "test", filepath.Join(ci, "a.agent.md"), "--junit", out); r.code != ExitOK {
		t.Fatalf("over an older kmx report: exit %d %s", r.code, r.stderr)
	}
	ents, err := os.ReadDir(ci)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".kmx-junit") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
}

// TestAFolderRunDeletedItsOwnJournals: `kmx test ci25/ --json` on 25
// files ended with 5 of the run IDs in its own JSON and JUnit already gone
// (each file's run start counted the invocation's earlier, finished runs
// as the oldest). Every run a folder run reports is still there when it
// ends; runs of earlier invocations are still deleted oldest first, and
// the next run start brings the folder back to the newest 20.
func TestAFolderRunDeletedItsOwnJournals(t *testing.T) {
	h := home(t)
	one := agentTree(t, map[string]string{"one.agent.md": passAgent})
	earlier := testRun(t, h, filepath.Join(one, "one.agent.md"))
	files := map[string]string{}
	for i := 0; i < journal.KeepRuns+2; i++ {
		files[fmt.Sprintf("a%02d.agent.md", i)] = passAgent
	}
	ci := agentTree(t, files)
	junit := filepath.Join(t.TempDir(), "junit.xml")
	r := kmx(t, h, "test", ci, "--json", "--junit", junit)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var got testedFiles
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	list := listRuns(t, h)
	kept := map[string]bool{}
	for _, run := range list.Runs {
		kept[run.ID] = true
	}
	if len(got.Files) != len(files) {
		t.Fatalf("%d reports for %d files", len(got.Files), len(files))
	}
	for _, rep := range got.Files {
		if !kept[rep.RunID] {
			t.Errorf("%s: run %s, reported in the JSON, was deleted by the run itself", rep.Agent.Path, rep.RunID)
		}
	}
	if kept[earlier] {
		t.Errorf("the earlier invocation's run %s was kept: retention must still delete the oldest finished run", earlier)
	}
	for _, id := range runIDText.FindAllString(fileText(t, junit), -1) {
		if !kept[id] {
			t.Errorf("run %s, named in the JUnit report, is gone", id)
		}
	}
	// The next start deletes the oldest finished runs down to the newest 20.
	testRun(t, h, filepath.Join(one, "one.agent.md"))
	if n := len(listRuns(t, h).Runs); n != journal.KeepRuns {
		t.Errorf("%d runs after the next start, want %d", n, journal.KeepRuns)
	}
}
