package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	runIDText   = regexp.MustCompile(`\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{8}`)
	durTotal    = regexp.MustCompile(`\d+\.\d ms`)
	durJSONText = regexp.MustCompile(`"durationMs": [0-9.e+-]+`)
)

func scrubRun(s string) string {
	s = runIDText.ReplaceAllString(s, "RUN")
	s = durTotal.ReplaceAllString(s, "D ms")
	return durJSONText.ReplaceAllString(s, `"durationMs": D`)
}

// TestTrialsOneEqualsPlainTest: --trials 1 prints exactly what a plain
// test prints, human, JSON and JUnit, except run IDs and durations.
func TestTrialsOneEqualsPlainTest(t *testing.T) {
	h := home(t)
	dir := t.TempDir()
	file := demoFile("release-notes.agent.md")
	for _, format := range [][]string{nil, {"--json"}} {
		a := kmx(t, h, append([]string{"test", file, "--junit", filepath.Join(dir, "a.xml")}, format...)...)
		b := kmx(t, h, append([]string{"test", file, "--trials", "1", "--junit", filepath.Join(dir, "b.xml")}, format...)...)
		if a.code != ExitOK || b.code != ExitOK {
			t.Fatalf("exit %d and %d: %s %s", a.code, b.code, a.stderr, b.stderr)
		}
		if scrubRun(a.stdout) != scrubRun(b.stdout) || a.stderr != b.stderr {
			t.Errorf("--trials 1 differs from a plain test (%v):\n%s\n---\n%s", format, a.stdout, b.stdout)
		}
		xa, _ := os.ReadFile(filepath.Join(dir, "a.xml"))
		xb, _ := os.ReadFile(filepath.Join(dir, "b.xml"))
		time := regexp.MustCompile(`time="[0-9.]+"`)
		if time.ReplaceAllString(scrubRun(string(xa)), "") != time.ReplaceAllString(scrubRun(string(xb)), "") {
			t.Errorf("JUnit differs:\n%s\n---\n%s", xa, xb)
		}
	}
}

// TestTrialsAndRegradeOnTheCommandLine: --trials prints per-example counts
// and the trials line; --from prints the re-grade line with zero agent
// model calls; bad values are usage errors.
func TestTrialsAndRegradeOnTheCommandLine(t *testing.T) {
	h := home(t)
	file := demoFile("release-notes.agent.md")
	r := kmx(t, h, "test", file, "--trials", "3")
	if r.code != ExitOK || !strings.Contains(r.stdout, "all 3 trials passed") || !strings.Contains(r.stdout, "3 trials per example, each a fresh Session · 0 examples flaky") {
		t.Errorf("--trials 3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	j := kmx(t, h, "test", file, "--trials", "2", "--json")
	if !strings.Contains(j.stdout, `"trials": {`) || !strings.Contains(j.stdout, `"judgeSplits": 0`) {
		t.Errorf("--trials --json has no trial counts:\n%s", j.stdout)
	}
	src := testRun(t, h, file)
	g := kmx(t, h, "test", file, "--from", src)
	if g.code != ExitOK || !strings.Contains(g.stdout, "re-grade of run "+src+": 0 agent model calls · 2 answers replayed from it · 2 judge samples reused · 0 fresh judge samples sent") {
		t.Errorf("--from: exit %d\n%s%s", g.code, g.stdout, g.stderr)
	}
	for _, bad := range [][]string{{"--trials", "0"}, {"--trials", "21"}, {"--trials", "x"}, {"--trials", "2", "--from", src}} {
		if u := kmx(t, h, append([]string{"test", file}, bad...)...); u.code != ExitRefusal {
			t.Errorf("%v: exit %d %s", bad, u.code, u.stderr)
		}
	}
	// Trials of a re-grade would grade the same answers again: refused,
	// saying which flag to drop for which intent.
	u := kmx(t, h, "test", file, "--from", src, "--trials", "3")
	if !strings.Contains(u.stderr, "--trials and --from cannot be combined") || !strings.Contains(u.stderr, "drop --trials to re-grade") || !strings.Contains(u.stderr, "drop --from to run N fresh trials") {
		t.Errorf("--from with --trials says:\n%s", u.stderr)
	}
}
