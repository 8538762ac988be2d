package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden transcripts under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./sidecar/internal/cli -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("transcript %s differs from the golden file.\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

var (
	durationText = regexp.MustCompile(`\d+\.\d ms`)
	durationJSON = regexp.MustCompile(`"durationMs": [0-9.e+-]+`)
	createdJSON  = regexp.MustCompile(`"created": "[^"]+"`)
	versionJSON  = regexp.MustCompile(`"kmxVersion": "[^"]+"`)
	revision     = regexp.MustCompile(`[0-9a-f]{64}|[0-9a-f]{12}…`)
)

// normalize replaces what differs between runs of a transcript: run IDs
// (by name), revisions, timestamps and durations.
func normalize(s string, runs map[string]string) string {
	for id, name := range runs {
		s = strings.ReplaceAll(s, id, name)
	}
	s = durationText.ReplaceAllString(s, "D ms")
	s = durationJSON.ReplaceAllString(s, `"durationMs": D`)
	s = createdJSON.ReplaceAllString(s, `"created": "T"`)
	s = versionJSON.ReplaceAllString(s, `"kmxVersion": "V"`)
	return revision.ReplaceAllString(s, "REV")
}

// writeAgentAt writes src to name in a fresh folder and returns its path.
func writeAgentAt(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// demoCopy copies a demo file into a fresh folder and returns its text,
// the folder and the copy's path.
func demoCopy(t *testing.T, name string) (src []byte, dir, file string) {
	t.Helper()
	src, err := os.ReadFile(demoFile(name))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	return src, dir, writeAgentAt(t, dir, name, string(src))
}

// TestJournalDiffTranscripts compares runs of the demo file before and
// after an edit of its directive and an example's ID, and a Run (which
// records no verdicts), against golden transcripts.
func TestJournalDiffTranscripts(t *testing.T) {
	h := home(t)
	src, dir, file := demoCopy(t, "release-notes.agent.md")
	a := testRun(t, h, file)
	edited := strings.Replace(string(src), "Reply with exactly `Release notes:` followed by the input", "Reply with exactly `Release notes -` followed by the input", 1)
	edited = strings.Replace(edited, "- id: hotfix", "- id: hotfix-2", 1)
	if edited == string(src) {
		t.Fatal("the demo file changed: the edit did not apply")
	}
	writeAgentAt(t, dir, "release-notes.agent.md", edited)
	b := testRun(t, h, file)
	r := kmx(t, h, "run", file, "--example", "weekly")
	if r.code != ExitFailure || r.stderr != "" {
		t.Fatalf("kmx run (the edited example fails): %+v", r)
	}
	runs := listRuns(t, h)
	c := runs.Runs[0].RunID
	names := map[string]string{a: "RUN_A", b: "RUN_B", c: "RUN_C", filepath.Dir(journal.PathKey(file)): "DIR"}

	d := kmx(t, h, "journal", "diff", a, b)
	if d.code != ExitFailure || d.stderr != "" {
		t.Fatalf("diff of differing runs: exit %d, stderr %q", d.code, d.stderr)
	}
	golden(t, "journal-diff.txt", normalize(d.stdout, names))
	dj := kmx(t, h, "journal", "diff", a, b, "--json")
	if dj.code != ExitFailure {
		t.Fatalf("diff --json: exit %d %s", dj.code, dj.stderr)
	}
	golden(t, "journal-diff.json", normalize(dj.stdout, names))
	dc := kmx(t, h, "journal", "diff", b, c)
	golden(t, "journal-diff-run.txt", normalize(dc.stdout, names))

	same := kmx(t, h, "journal", "diff", a, a)
	if same.code != ExitOK || !strings.Contains(same.stdout, "2 same, 0 changed") || !strings.Contains(same.stdout, "live calls: 0") {
		t.Errorf("a run against itself: exit %d\n%s", same.code, same.stdout)
	}
	missing := kmx(t, h, "journal", "diff", a, "20200101T000000.000000000Z-00000000")
	if missing.code != ExitRefusal || !strings.Contains(missing.stderr, "no retained run") {
		t.Errorf("a missing run: exit %d %q", missing.code, missing.stderr)
	}
	if u := kmx(t, h, "journal", "diff", a); u.code != ExitRefusal || !strings.Contains(u.stderr, "name two runs") {
		t.Errorf("one run: exit %d %q", u.code, u.stderr)
	}
}

// runIDOf runs kmx with args (a test with --json) and returns its run ID.
func runIDOf(t *testing.T, h string, args ...string) string {
	t.Helper()
	r := kmx(t, h, args...)
	var rep struct{ RunID string }
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.RunID == "" {
		t.Fatalf("kmx %v: %d %v\n%s", args, r.code, err, r.stderr)
	}
	return rep.RunID
}

// TestJournalDiffTranscriptsOfTrialsAndRegrade: a trials run shows every
// trial (A#1, A#2), and a re-grade after only an assertion changed is
// marked as a re-grade of its source, with the same answers and the
// changed verdict, against golden transcripts.
func TestJournalDiffTranscriptsOfTrialsAndRegrade(t *testing.T) {
	h := home(t)
	src, dir, file := demoCopy(t, "release-notes.agent.md")
	trials := runIDOf(t, h, "test", file, "--trials", "2", "--json")
	edited := strings.Replace(string(src), "- notContains: TODO", "- notContains: week", 1)
	if edited == string(src) {
		t.Fatal("the demo file changed: the assertion edit did not apply")
	}
	writeAgentAt(t, dir, "release-notes.agent.md", edited)
	regrade := runIDOf(t, h, "test", file, "--from", trials, "--json")
	names := map[string]string{trials: "RUN_TRIALS", regrade: "RUN_REGRADE", filepath.Dir(journal.PathKey(file)): "DIR"}

	d := kmx(t, h, "journal", "diff", trials, regrade)
	if d.code != ExitFailure || d.stderr != "" {
		t.Fatalf("diff of a trials run and its re-grade: exit %d, stderr %q", d.code, d.stderr)
	}
	golden(t, "journal-diff-regrade.txt", normalize(d.stdout, names))
	dj := kmx(t, h, "journal", "diff", trials, regrade, "--json")
	golden(t, "journal-diff-regrade.json", normalize(dj.stdout, names))
}

// TestJournalDiffTrialsAgainstASingleRun: a trials run whose every trial
// gives the single run's answer and verdict compares as the same, not as
// changed because it ran each example more times; a trials run whose
// trials differ is changed.
func TestJournalDiffTrialsAgainstASingleRun(t *testing.T) {
	h := home(t)
	src, dir, file := demoCopy(t, "release-notes.agent.md")
	trials := runIDOf(t, h, "test", file, "--trials", "3", "--json")
	single := runIDOf(t, h, "test", file, "--json")
	summary := func(a, b string) readback.DiffSummary {
		t.Helper()
		r := kmx(t, h, "journal", "diff", a, b, "--json")
		var d readback.RunDiff
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatalf("diff --json: %v\n%s%s", err, r.stdout, r.stderr)
		}
		return d.Summary
	}
	if s := summary(trials, single); s.Changed != 0 || s.Same == 0 {
		t.Errorf("three identical trials against a single run: %+v, want all same", s)
	}
	if s := summary(single, trials); s.Changed != 0 || s.Same == 0 {
		t.Errorf("a single run against three identical trials: %+v, want all same", s)
	}
	edited := strings.Replace(string(src), "- notContains: TODO", "- notContains: week", 1)
	if edited == string(src) {
		t.Fatal("the demo file changed: the assertion edit did not apply")
	}
	writeAgentAt(t, dir, "release-notes.agent.md", edited)
	failing := runIDOf(t, h, "test", file, "--json")
	if s := summary(trials, failing); s.Changed == 0 {
		t.Errorf("three trials against a run whose verdict differs: %+v, want a change", s)
	}
}

// TestJournalDiffOfMultiTurnTrials: a multi-turn example's rows are named
// by turn ("A turn 2", "A#2 turn 1" with trials), each with its journaled
// duration, a turn not run says only that; a trials run keeps each
// trial's turns (never listed as examples "ID/turn:N"), and trials that
// all match the single run compare as the same.
func TestJournalDiffOfMultiTurnTrials(t *testing.T) {
	h := home(t)
	file := writeAgent(t, "---\nmodel: fake\n---\nReply with the turn number\n\n## Examples\n\n```yaml\n"+
		"- id: stops\n  turns:\n"+
		"    - input: a\n      assert: [contains: 'Turn 1: a']\n"+
		"    - input: b\n      assert: [contains: 'Turn 9']\n"+
		"    - input: c\n      assert: [contains: 'Turn 3: c']\n"+
		"```\n")
	trials := runIDOf(t, h, "test", file, "--trials", "2", "--json")
	single := runIDOf(t, h, "test", file, "--json")
	d := kmx(t, h, "journal", "diff", trials, single)
	if d.code != ExitOK || d.stderr != "" {
		t.Fatalf("exit %d, stderr %q\n%s", d.code, d.stderr, d.stdout)
	}
	for _, want := range []string{"SAME     stops", "  A#1 turn 1 PASS · verified · model fake (fake) · ", "  A#2 turn 2 FAIL · verified",
		"  A#2 turn 3 NOT RUN · not sent\n", "  B turn 2 FAIL · verified", "  B turn 3 NOT RUN · not sent\n", "1 same, 0 changed, 0 only in A, 0 only in B"} {
		if !strings.Contains(d.stdout, want) {
			t.Errorf("the diff does not say %q:\n%s", want, d.stdout)
		}
	}
	if strings.Contains(d.stdout, "duration not recorded") || strings.Contains(d.stdout, "/turn:") {
		t.Errorf("a turn without its duration, or turns listed as examples:\n%s", d.stdout)
	}
}
