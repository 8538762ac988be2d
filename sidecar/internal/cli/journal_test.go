package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

type listJSON struct {
	Schema string
	Keep   int
	File   *struct{ AgentID string }
	Runs   []struct {
		RunID, Status, AgentID, Command string
		Size                            int64
		CurrentRevision                 *bool
	}
}

func listRuns(t *testing.T, h string, args ...string) listJSON {
	t.Helper()
	r := kmx(t, h, append([]string{"journal", "list", "--json"}, args...)...)
	if r.code != ExitOK {
		t.Fatalf("journal list: %d %s", r.code, r.stderr)
	}
	var l listJSON
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	return l
}

func testRun(t *testing.T, h, file string) string {
	t.Helper()
	r := kmx(t, h, "test", file, "--json")
	var rep struct{ RunID string }
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.RunID == "" {
		t.Fatalf("kmx test %s: %d %v\n%s", file, r.code, err, r.stderr)
	}
	return rep.RunID
}

func TestJournalListFiltersByFileAndMarksRevisions(t *testing.T) {
	h := home(t)
	if r := kmx(t, h, "journal", "list"); r.code != ExitOK || !strings.Contains(r.stdout, "no retained runs") {
		t.Fatalf("list before any run: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(h, "local-preview")); !os.IsNotExist(err) {
		t.Fatalf("journal list created state: %v", err)
	}
	// The same agent before and after an edit, and another agent.
	src, err := os.ReadFile(demoFile("release-notes.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "release-notes.agent.md")
	if err := os.WriteFile(file, src, 0o600); err != nil {
		t.Fatal(err)
	}
	old := testRun(t, h, file)
	other := testRun(t, h, demoFile("support-triage.agent.md"))
	if err := os.WriteFile(file, append(src, "\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	cur := testRun(t, h, file)

	all := listRuns(t, h)
	if all.Schema != JournalListSchema || all.Keep != 20 || len(all.Runs) != 3 {
		t.Fatalf("list %+v", all)
	}
	if all.Runs[0].RunID != cur || all.Runs[1].RunID != other || all.Runs[2].RunID != old {
		t.Errorf("not newest first: %+v", all.Runs)
	}
	for _, r := range all.Runs {
		if r.Status != "finished" || r.Command != "test" || r.Size <= 0 || r.CurrentRevision != nil {
			t.Errorf("run %+v", r)
		}
	}
	mine := listRuns(t, h, "--file", file)
	if mine.File == nil || mine.File.AgentID != "release-notes" || len(mine.Runs) != 2 {
		t.Fatalf("--file list %+v", mine)
	}
	if r := mine.Runs[0]; r.RunID != cur || r.CurrentRevision == nil || !*r.CurrentRevision {
		t.Errorf("current run %+v", r)
	}
	if r := mine.Runs[1]; r.RunID != old || r.CurrentRevision == nil || *r.CurrentRevision {
		t.Errorf("earlier revision %+v", r)
	}
	human := kmx(t, h, "journal", "list", "--file", file)
	if !strings.Contains(human.stdout, "(earlier revision)") || strings.Contains(human.stdout, other) {
		t.Errorf("human list:\n%s", human.stdout)
	}
	if r := kmx(t, h, "journal", "list", "--file", "missing.agent.md"); r.code != ExitRefusal || !strings.Contains(r.stderr, "cannot read") {
		t.Errorf("--file of a missing file: %+v", r)
	}
}

func TestJournalClear(t *testing.T) {
	h := home(t)
	a := testRun(t, h, demoFile("release-notes.agent.md"))
	b := testRun(t, h, demoFile("release-notes.agent.md"))
	dir := journal.Dir(h)
	stray := filepath.Join(dir, "keep-me.txt")
	if err := os.WriteFile(stray, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	live, err := journal.Create(context.Background(), dir, journal.RunMeta{KmxVersion: "t", AgentID: "x", AgentRevision: "r", Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	cases := []cliCase{
		{"not a run ID", []string{"../x"}, ExitRefusal, "", "is not a run ID"},
		{"two runs", []string{a, b}, ExitRefusal, "", "one run at a time"},
		{"no such run", []string{"20200101T000000.000000000Z-00000000"}, ExitRefusal, "", "there is no run"},
		{"one run", []string{a}, ExitOK, "removed 1 run", ""},
		{"the executing run", []string{live.ID()}, ExitRefusal, "", "still executing"},
		{"all: the executing run is kept", []string{"--json"}, ExitRefusal, `"kept": [`, "still executing"},
	}
	checkCLI(t, h, []string{"journal", "clear"}, cases)
	// One error shape: the journal's error carries its own next step, and
	// the CLI says it once (problem.Text), as JSON-RPC and MCP do.
	missing := "20200101T000000.000000000Z-00000000"
	r := kmx(t, h, "journal", "clear", missing)
	nf := &journal.NotFoundError{RunID: missing, Dir: dir}
	if want := "kmx journal clear: there is no run " + missing + " in " + dir + "\nnext: " + nf.NextStep() + "\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	l := listRuns(t, h)
	if len(l.Runs) != 1 || l.Runs[0].RunID != live.ID() || l.Runs[0].Status != "running" {
		t.Fatalf("after clearing: %+v", l.Runs)
	}
	if b, err := os.ReadFile(stray); err != nil || string(b) != "mine" {
		t.Errorf("stray file touched: %q %v", b, err)
	}
	if err := live.Finish(context.Background(), journal.StatusFinished); err != nil {
		t.Fatalf("the kept run cannot finish: %v", err)
	}
	if r := kmx(t, h, "journal", "clear"); r.code != ExitOK || !strings.Contains(r.stdout, "removed 1 run") {
		t.Fatalf("clear after it finished: %+v", r)
	}
}

func TestJournalInspect(t *testing.T) {
	h := home(t)
	id := testRun(t, h, demoFile("release-notes.agent.md"))
	cases := []struct {
		name      string
		args      []string
		code      int
		stdout    []string
		notStdout []string
		stderr    string
	}{
		{"human", []string{id}, ExitOK, []string{"VERIFIED", "answer: Release notes: Draft notes for this week", "score 100", "0 live model calls", "local preview journal replay; not a test result", "reasoning withheld"}, []string{"reasoning: "}, ""},
		{"human with reasoning", []string{id, "--show-reasoning"}, ExitOK, []string{"reasoning: found"}, []string{"reasoning withheld"}, ""},
		{"json", []string{id, "--json"}, ExitOK, []string{`"schema": "kmx.journal.inspect/v2"`, `"liveCalls": 0`, `"reasoningShown": false`}, []string{`"reasoning"`}, ""},
		{"json with reasoning", []string{"--json", "--show-reasoning", id}, ExitOK, []string{`"reasoning": "found`}, nil, ""},
		{"no run named", nil, ExitRefusal, nil, nil, "name one run"},
		{"not a run ID", []string{"x.db"}, ExitRefusal, nil, nil, "is not a run ID"},
		{"no such run", []string{"20200101T000000.000000000Z-00000000"}, ExitRefusal, nil, nil, "there is no retained run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := kmx(t, h, append([]string{"journal", "inspect"}, c.args...)...)
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) {
				t.Fatalf("got %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			for _, s := range c.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range c.notStdout {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

// TestJournalCommandsRefuseUnsafeState: a state folder or journal with
// broader modes, or a symlinked state component, is refused by every
// command with a message that says how to fix it, and nothing is repaired.
func TestJournalCommandsRefuseUnsafeState(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, h, runID string) string // returns the KMX_HOME to use
		cmds  [][]string
		want  string
	}{
		{"state folder 0755", func(t *testing.T, h, _ string) string {
			chmod(t, h, 0o755)
			return h
		}, [][]string{{"journal", "list"}, {"journal", "clear"}, {"journal", "inspect", "RUN"}, {"test", demoFile("release-notes.agent.md")}}, "chmod 700"},
		{"journals folder 0750", func(t *testing.T, h, _ string) string {
			chmod(t, journal.Dir(h), 0o750)
			return h
		}, [][]string{{"journal", "list"}, {"journal", "clear", "RUN"}, {"journal", "inspect", "RUN"}, {"test", demoFile("release-notes.agent.md")}}, "chmod 700"},
		{"journal file 0644", func(t *testing.T, h, id string) string {
			chmod(t, filepath.Join(journal.Dir(h), id+".db"), 0o644)
			return h
		}, [][]string{{"journal", "inspect", "RUN"}, {"journal", "clear", "RUN"}}, "chmod 600"},
		{"KMX_HOME is a symlink", func(t *testing.T, h, _ string) string {
			l := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(h, l); err != nil {
				t.Fatal(err)
			}
			return l
		}, [][]string{{"journal", "list"}, {"journal", "clear"}, {"journal", "inspect", "RUN"}, {"test", demoFile("release-notes.agent.md")}}, "symbolic link"},
		{"journals folder is a symlink", func(t *testing.T, h, _ string) string {
			real := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.Rename(journal.Dir(h), real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, journal.Dir(h)); err != nil {
				t.Fatal(err)
			}
			return h
		}, [][]string{{"journal", "list"}, {"journal", "clear"}, {"journal", "inspect", "RUN"}, {"test", demoFile("release-notes.agent.md")}}, "symbolic link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := home(t)
			id := testRun(t, h, demoFile("release-notes.agent.md"))
			use := c.setup(t, h, id)
			for _, cmd := range c.cmds {
				args := make([]string, len(cmd))
				for i, a := range cmd {
					args[i] = strings.ReplaceAll(a, "RUN", id)
				}
				r := kmx(t, use, args...)
				if r.code != ExitRefusal || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "next: ") {
					t.Errorf("%v: %d\nstdout %s\nstderr %s", args, r.code, r.stdout, r.stderr)
				}
				// The next step is the state check's own (one place says
				// it): a symlink is moved aside, not chmod-ed.
				if c.want == "symbolic link" && strings.Contains(r.stderr, "chmod") {
					t.Errorf("%v: a symlinked state component is told to chmod:\n%s", args, r.stderr)
				}
			}
			// Refused, never repaired or removed.
			if _, err := os.Lstat(filepath.Join(journal.Dir(h), id+".db")); err != nil && c.name != "journals folder is a symlink" {
				t.Errorf("the refused run's journal is gone: %v", err)
			}
		})
	}
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(p, 0o700) })
}

// Issue 31 item 17: the run ID was runId in kmx test --json and id in
// kmx journal list --json. Every document names a run by runId: the test
// report, the list, inspect's run and diff's two sides.
func TestEveryJSONDocumentNamesTheRunByRunId(t *testing.T) {
	h := home(t)
	file := demoFile("release-notes.agent.md")
	a := testRun(t, h, file)
	b := testRun(t, h, file)
	decode := func(args ...string) map[string]any {
		t.Helper()
		r := kmx(t, h, args...)
		if r.code != ExitOK {
			t.Fatalf("kmx %v: %d %s", args, r.code, r.stderr)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
			t.Fatalf("kmx %v: %v\n%s", args, err, r.stdout)
		}
		return m
	}
	runID := func(where string, v any) string {
		t.Helper()
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s is not an object: %v", where, v)
		}
		if _, has := m["id"]; has {
			t.Errorf("%s names its run by id: %v", where, m)
		}
		id, _ := m["runId"].(string)
		return id
	}
	list := decode("journal", "list", "--json")
	runs, _ := list["runs"].([]any)
	if len(runs) != 2 || runID("list runs[0]", runs[0]) != b || runID("list runs[1]", runs[1]) != a {
		t.Errorf("journal list --json runs = %v, want runId %s then %s", runs, b, a)
	}
	if got := runID("inspect run", decode("journal", "inspect", a, "--json")["run"]); got != a {
		t.Errorf("journal inspect --json run.runId = %q, want %s", got, a)
	}
	diff := decode("journal", "diff", a, b, "--json")
	if runID("diff a", diff["a"]) != a || runID("diff b", diff["b"]) != b {
		t.Errorf("journal diff --json a/b = %v / %v, want runId %s / %s", diff["a"], diff["b"], a, b)
	}
}

// Issue 31 item 14: ci/release-notes.agent.md and tools/release-notes.agent.md
// were one agent to journal list --file and to --from: each listed the
// other's runs, and one re-graded the other's answers. Runs are keyed by the
// file's path as well as its agent ID.
func TestSameNamedFilesInTwoFoldersAreTwoAgentsToListAndFrom(t *testing.T) {
	h := home(t)
	src, err := os.ReadFile(demoFile("release-notes.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var files [2]string
	for i, folder := range []string{"ci", "tools"} {
		if err := os.Mkdir(filepath.Join(root, folder), 0o700); err != nil {
			t.Fatal(err)
		}
		files[i] = filepath.Join(root, folder, "release-notes.agent.md")
		if err := os.WriteFile(files[i], src, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ci := testRun(t, h, files[0])
	tools := testRun(t, h, files[1])
	for i, want := range []string{ci, tools} {
		l := listRuns(t, h, "--file", files[i])
		if len(l.Runs) != 1 || l.Runs[0].RunID != want {
			t.Errorf("journal list --file %s lists %+v, want its own run %s only", files[i], l.Runs, want)
		}
	}
	r := kmx(t, h, "test", files[1], "--from", ci)
	if r.code != ExitRefusal || !strings.Contains(r.stderr, "another file named") || !strings.Contains(r.stderr, files[0]) {
		t.Errorf("kmx test tools/… --from a run of ci/…: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := kmx(t, h, "test", files[1], "--from", tools); r.code != ExitOK {
		t.Errorf("kmx test tools/… --from its own run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Issue 31 item 20: the replay did not show the instructions an agent turn
// sent, so a user could not see that the whole agent body went. kmx journal
// inspect says how much each turn sent and shows it with --show-content;
// --json carries it the same way.
func TestTheReplayShowsTheInstructionsEachAgentTurnSent(t *testing.T) {
	h := home(t)
	id := testRun(t, h, demoFile("release-notes.agent.md"))
	var in struct {
		ContentShown bool
		Turns        []struct {
			Purpose                              string
			Instructions                         *string
			InstructionsBytes, InstructionsLines int
		}
	}
	decode := func(args ...string) {
		t.Helper()
		r := kmx(t, h, append([]string{"journal", "inspect", id, "--json"}, args...)...)
		in.ContentShown, in.Turns = false, nil
		if err := json.Unmarshal([]byte(r.stdout), &in); err != nil || len(in.Turns) == 0 {
			t.Fatalf("inspect --json %v: %v\n%s", args, err, r.stdout)
		}
	}
	decode("--show-content")
	first := in.Turns[0]
	if !in.ContentShown || first.Instructions == nil || !strings.HasPrefix(*first.Instructions, "You draft release notes for the repository.\nKeep them short and factual.\n") ||
		first.InstructionsBytes != len(*first.Instructions) || first.InstructionsLines != 4 {
		t.Fatalf("inspect --json --show-content: %+v", in)
	}
	body := *first.Instructions
	sent := fmt.Sprintf("%d bytes, 4 lines", len(body))
	decode()
	for _, turn := range in.Turns {
		if in.ContentShown || turn.Instructions != nil || turn.InstructionsBytes != len(body) {
			t.Errorf("inspect --json: contentShown %v, a %s turn carries %d bytes, instructions %v", in.ContentShown, turn.Purpose, turn.InstructionsBytes, turn.Instructions)
		}
	}

	r := kmx(t, h, "journal", "inspect", id)
	if r.code != ExitOK || !strings.Contains(r.stdout, "    instructions: "+sent+" sent (withheld)\n") ||
		!strings.Contains(r.stdout, "instructions and workspace diffs withheld; add --show-content to see what each agent turn sent and changed") || strings.Contains(r.stdout, "Keep them short") {
		t.Fatalf("inspect without --show-content: exit %d\n%s", r.code, r.stdout)
	}
	r = kmx(t, h, "journal", "inspect", id, "--show-content")
	if r.code != ExitOK || !strings.Contains(r.stdout, "    instructions sent ("+sent+"):\n      You draft release notes for the repository.\n      Keep them short and factual.\n\n      Reply with exactly") {
		t.Fatalf("inspect --show-content: exit %d\n%s", r.code, r.stdout)
	}
}

// Issue 27's leftover, issue 31 item 20: kmx journal inspect showed nothing
// of what a workspace turn changed. It names each changed path with the
// lines added and removed, and with --show-content the diff.
func TestJournalInspectShowsWhatAWorkspaceTurnChanged(t *testing.T) {
	h := home(t)
	id := testRun(t, h, demoFile("fix-add.agent.md"))
	r := kmx(t, h, "journal", "inspect", id)
	if r.code != ExitOK || !strings.Contains(r.stdout, "    workspace fixtures/calc: 1 file changed\n      modified calc/add.go (+1 -1)\n") || strings.Contains(r.stdout, "return a + b") {
		t.Fatalf("inspect: exit %d\n%s", r.code, r.stdout)
	}
	r = kmx(t, h, "journal", "inspect", id, "--show-content")
	if r.code != ExitOK || !strings.Contains(r.stdout, "      modified calc/add.go (+1 -1)\n        @@ ") || !strings.Contains(r.stdout, "        + return a + b\n") {
		t.Fatalf("inspect --show-content: exit %d\n%s", r.code, r.stdout)
	}
}
