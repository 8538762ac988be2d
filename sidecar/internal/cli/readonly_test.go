package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readOnlyView mounts dir read-only at a new path (a bind mount) and
// returns that path; the mount is removed when the test ends. Permissions
// cannot make a folder read-only here: kmx refuses a state folder that is
// not exactly 0700, and root ignores them. The test is skipped, saying why,
// where the process may not mount.
func readOnlyView(t *testing.T, dir string) string {
	t.Helper()
	view := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(view, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--bind", "-o", "ro", dir, view).CombinedOutput(); err != nil {
		t.Skipf("a read-only state folder needs a read-only bind mount, which this process may not make: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", view).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", view, err, out)
		}
	})
	if err := os.WriteFile(filepath.Join(view, "probe"), nil, 0o600); err == nil {
		t.Fatalf("%s is writable after a read-only bind mount", view)
	}
	return view
}

// TestReadOnlyStateFolderReadsJournals: on a read-only state folder (a
// read-only mount) the readers open journals read-only: journal inspect and
// diff replay fine journals instead of calling them damaged, and chat
// --history shows the conversation. Only a new run is refused, with a step.
func TestReadOnlyStateFolderReadsJournals(t *testing.T) {
	h := home(t)
	file := demoFile("release-notes.agent.md")
	runID := regexp.MustCompile(`run (\S+) ·`)
	var runs []string
	for range 2 {
		r := kmx(t, h, "test", file)
		m := runID.FindStringSubmatch(r.stdout)
		if r.code != ExitOK || m == nil {
			t.Fatalf("test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		runs = append(runs, m[1])
	}
	if r := kmx(t, h, "chat", file, "--input", "hello"); r.code != ExitOK {
		t.Fatalf("chat: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ro := readOnlyView(t, h)
	for _, args := range [][]string{
		{"journal", "inspect", runs[0]},
		{"journal", "inspect", runs[0], "--json"},
		{"journal", "diff", runs[0], runs[1]},
		{"journal", "list"},
		{"chat", file, "--history"},
	} {
		r := kmx(t, ro, args...)
		if r.code != ExitOK || strings.Contains(r.stdout+r.stderr, "damaged") {
			t.Errorf("%v on a read-only state folder: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := kmx(t, ro, "chat", file, "--history"); !strings.Contains(r.stdout, "Release notes: hello") {
		t.Errorf("chat --history does not show the turn:\n%s", r.stdout)
	}
	r := kmx(t, ro, "test", file)
	if r.code != ExitRefusal || !strings.Contains(r.stderr, "next: make the kmx state folder writable") {
		t.Errorf("a run on a read-only state folder: exit %d, want %d with the step that makes it work\n%s", r.code, ExitRefusal, r.stderr)
	}
}
