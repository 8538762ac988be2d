package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// turnsWorkspaceAgent is a coding agent tested as a conversation over one
// fixture workspace on the fake model: its instructions hold no directive,
// so each turn's input carries that turn's Replace directive. In
// "session" turn 2 can only make its edit on turn 1's result, and turn 3's
// filesChanged lists every file changed so far. In "stops" turn 1 makes the
// wrong edit, so turn 2 is never sent.
const turnsWorkspaceAgent = "---\nname: fix-add\ndescription: Fixes calc over a conversation.\nmodel: fake\n" +
	"tools: ['read/readFile', 'edit/editFiles']\n---\nYou fix small bugs in the calc package.\n\n## Examples\n\n```yaml\n" +
	"- workspace: fixtures/calc\n" +
	"- id: session\n  turns:\n" +
	"    - input: \"Replace `return a - b` with `return a + b` in `calc/add.go`\"\n" +
	"      assert:\n" +
	"        - fileContains: {path: calc/add.go, text: \"return a + b\"}\n" +
	"        - filesChanged: [calc/add.go]\n" +
	"    - input: \"Replace `return a + b` with `return b + a` in `calc/add.go`\"\n" +
	"      assert:\n" +
	"        - fileContains: {path: calc/add.go, text: \"return b + a\"}\n" +
	"        - fileUnchanged: calc/add_test.go\n" +
	"    - input: \"Replace `# calc` with `# calc (fixed)` in `README.md`\"\n" +
	"      assert:\n" +
	"        - filesChanged: [README.md, calc/add.go]\n" +
	"        - fileContains: {path: calc/add.go, text: \"return b + a\"}\n" +
	"- id: stops\n  turns:\n" +
	"    - input: \"Replace `return a - b` with `return a * b` in `calc/add.go`\"\n" +
	"      assert:\n" +
	"        - fileContains: {path: calc/add.go, text: \"return a + b\"}\n" +
	"    - input: \"Replace `return a * b` with `return a + b` in `calc/add.go`\"\n" +
	"      assert:\n" +
	"        - fileContains: {path: calc/add.go, text: \"return a + b\"}\n" +
	"```\n"

// fixtureFiles reads every file under dir, by its slash path.
func fixtureFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func turnVerdicts(ex ExampleResult) []string {
	var out []string
	for _, tr := range ex.Turns {
		out = append(out, tr.Verdict)
	}
	return out
}

// A multi-turn example with a workspace runs its turns in one scratch copy:
// each turn sees the files as the earlier turns left them, each turn's
// file assertions are judged on the copy after that turn (changes counted
// from the fixture, so cumulative), a failing turn stops the later ones,
// every copy is removed when its example ends, the user's fixture is never
// written, and a re-grade of the run sends nothing and gives the same
// verdicts turn by turn.
func TestMultiTurnWorkspaceTurnsShareOneCopy(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := copyDemoWorkspace(t, func(string) string { return turnsWorkspaceAgent })
	fixture := filepath.Join(filepath.Dir(req.Path), "fixtures", "calc")
	before := fixtureFiles(t, fixture)
	opts := Options{Options: invocation.Options{StateDir: home}}
	rep, err := Test(context.Background(), opts, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Examples) != 2 {
		t.Fatalf("examples = %+v", rep.Examples)
	}
	session, stops := rep.Examples[0], rep.Examples[1]
	if session.Verdict != VerdictPass || !slices.Equal(turnVerdicts(session), []string{VerdictPass, VerdictPass, VerdictPass}) {
		t.Fatalf("session = %s %q, turns %+v", session.Verdict, session.Message, session.Turns)
	}
	for i, tr := range session.Turns {
		for _, a := range tr.Assertions {
			if a.Outcome != judge.Pass {
				t.Errorf("session turn %d: %+v", i+1, a)
			}
		}
	}
	changed := func(w *WorkspaceSummary) []string {
		var out []string
		if w != nil {
			for _, c := range w.Changed {
				out = append(out, c.Path+" "+c.Kind)
			}
		}
		return out
	}
	if got := changed(session.Turns[0].Workspace); !slices.Equal(got, []string{"calc/add.go modified"}) {
		t.Errorf("turn 1 workspace = %v", got)
	}
	if got := changed(session.Turns[2].Workspace); !slices.Equal(got, []string{"README.md modified", "calc/add.go modified"}) {
		t.Errorf("turn 3 workspace = %v", got)
	}
	if session.Workspace == nil || session.Workspace.Fixture != "fixtures/calc" || session.Workspace.Counts.Modified != 2 {
		t.Errorf("example workspace = %+v", session.Workspace)
	}

	if stops.Verdict != VerdictFail || !slices.Equal(turnVerdicts(stops), []string{VerdictFail, VerdictNotRun}) ||
		!strings.Contains(stops.Message, "turn 1 of 2") || !strings.Contains(stops.Message, "1 later turn(s) not run") {
		t.Fatalf("stops = %s %q, turns %+v", stops.Verdict, stops.Message, stops.Turns)
	}
	if o := stops.WorkspaceOutcome(); o == nil || len(o.Changes) != 1 || !strings.Contains(string(o.Changes[0].Content), "return a * b") {
		t.Errorf("stops outcome for the CLI's diff = %+v", o)
	}
	sessions := agentSessions(t, home, rep.RunID)
	if _, sent := sessions["stops/turn:2"]; sent || len(sessions) != 4 {
		t.Errorf("agent sessions journaled: %d, stops/turn:2 sent %v", len(sessions), sent)
	}
	if left := scratchLeft(t, home); len(left) != 0 {
		t.Fatalf("scratch copies left after the run: %v", left)
	}
	if after := fixtureFiles(t, fixture); !sameFiles(before, after) {
		t.Fatalf("the run wrote the user's fixture: %v, was %v", after, before)
	}

	rg, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}, FromRun: rep.RunID}, req)
	if err != nil {
		t.Fatal(err)
	}
	// session's three turns and stops' turn 1 replayed; stops' turn 2 was
	// never sent, so it is not sent now either.
	if rg.Regrade == nil || rg.Regrade.AgentCalls != 0 || rg.Regrade.JudgeCalls != 0 || rg.Regrade.Replayed != 4 {
		t.Fatalf("re-grade = %+v", rg.Regrade)
	}
	if ex := rg.Examples[0]; ex.Verdict != session.Verdict || !slices.Equal(turnVerdicts(ex), turnVerdicts(session)) {
		t.Errorf("re-graded session = %s %v, was %s %v", ex.Verdict, turnVerdicts(ex), session.Verdict, turnVerdicts(session))
	}
	for i, tr := range rg.Examples[0].Turns {
		for k, a := range tr.Assertions {
			if a.Outcome != session.Turns[i].Assertions[k].Outcome || a.Message != session.Turns[i].Assertions[k].Message {
				t.Errorf("re-graded turn %d assertion %d = %+v, was %+v", i+1, k, a, session.Turns[i].Assertions[k])
			}
		}
	}
	if ex := rg.Examples[1]; ex.Verdict != VerdictFail || !slices.Equal(turnVerdicts(ex), turnVerdicts(stops)) {
		t.Errorf("re-graded stops = %s %q", ex.Verdict, ex.Message)
	}
	if got := changed(rg.Examples[0].Turns[2].Workspace); !slices.Equal(got, []string{"README.md modified", "calc/add.go modified"}) {
		t.Errorf("re-graded turn 3 workspace = %v", got)
	}

	// The fixture changed since the run: each example is refused, nothing sent.
	if err := os.WriteFile(filepath.Join(fixture, "NOTES.txt"), []byte("added after the run\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rg, err = Test(context.Background(), Options{Options: invocation.Options{StateDir: home}, FromRun: rep.RunID}, req)
	if err != nil {
		t.Fatal(err)
	}
	if ex := rg.Examples[0]; ex.Verdict != VerdictRefused || !strings.Contains(ex.Message, "the fixture workspace fixtures/calc changed since run") ||
		rg.Regrade.AgentCalls != 0 || rg.Regrade.Replayed != 0 {
		t.Fatalf("re-grade after the fixture changed: %s %q %+v", ex.Verdict, ex.Message, rg.Regrade)
	}
}

// --keep-workspace keeps one copy per multi-turn example, as its last
// sent turn left it.
func TestMultiTurnKeepWorkspaceKeepsOneCopyPerExample(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := copyDemoWorkspace(t, func(string) string { return turnsWorkspaceAgent })
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}, KeepWorkspace: true}, req)
	if err != nil {
		t.Fatal(err)
	}
	if left := scratchLeft(t, home); len(left) != 2 {
		t.Fatalf("kept copies = %v", left)
	}
	session := rep.Examples[0]
	b, err := os.ReadFile(filepath.Join(session.KeptWorkspace, "calc", "add.go"))
	if err != nil || !strings.Contains(string(b), "return b + a") {
		t.Fatalf("kept copy %q holds %q (%v)", session.KeptWorkspace, b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(session.KeptWorkspace, "README.md")); !strings.HasPrefix(string(b), "# calc (fixed)") {
		t.Fatalf("kept README = %q", b)
	}
}

func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
