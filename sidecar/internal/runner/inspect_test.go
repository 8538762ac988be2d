package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/journal/journaltest"
)

func TestInspectReplaysEveryCompleteTurnWithZeroModelCalls(t *testing.T) {
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{Concurrency: 1, StateDir: home}}, demo(t, "release-notes.agent.md"))
	if err != nil || rep.Verdict != VerdictPass {
		t.Fatalf("test: %v %+v", err, rep)
	}
	dir := journal.Dir(home)
	before := testutil.DirNames(t, dir)
	in, err := readback.Inspect(context.Background(), dir, rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if in.Schema != readback.InspectSchema || in.Label != readback.InspectLabel || in.LiveCalls != 0 {
		t.Fatalf("header %q %q live=%d", in.Schema, in.Label, in.LiveCalls)
	}
	if in.Run.ID != rep.RunID || in.Run.Status != journal.StatusFinished || in.Run.Command != "test" || in.Run.AgentID != "release-notes" || in.Run.Created.IsZero() {
		t.Errorf("run %+v", in.Run)
	}
	want := readback.InspectSummary{Turns: 2, Verified: 2, JudgeSamples: 2}
	if in.Summary != want {
		t.Errorf("summary %+v, want %+v", in.Summary, want)
	}
	if len(in.Turns) != 2 {
		t.Fatalf("turns %+v", in.Turns)
	}
	for i, ex := range []string{"weekly", "hotfix"} {
		tr := in.Turns[i]
		if tr.Example != ex || tr.Purpose != invocation.PurposeAgent || tr.State != readback.TurnVerified || tr.Answer == nil || tr.Model.Model == "" || tr.Input == "" {
			t.Errorf("turn %d: %+v", i, tr)
			continue
		}
		if want := "Release notes: " + tr.Input; *tr.Answer != want {
			t.Errorf("turn %d answer %q, want %q", i, *tr.Answer, want)
		}
	}
	samples := in.Turns[0].JudgeSamples
	if len(samples) != 2 || len(in.Turns[1].JudgeSamples) != 0 {
		t.Fatalf("judge samples %+v / %+v", samples, in.Turns[1].JudgeSamples)
	}
	for _, s := range samples {
		if s.State != readback.TurnVerified || s.Reply != readback.ReplyScored || s.Score == nil || *s.Score != 100 || s.Reasoning == nil || !strings.Contains(s.Rubric, "this week") {
			t.Errorf("sample %+v", s)
		}
	}
	in.HideReasoning()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"reasoning"`) || in.ReasoningShown {
		t.Errorf("reasoning shown after HideReasoning: %s", b)
	}
	// Inspection changes nothing in the folder and sends nothing.
	if after := testutil.DirNames(t, dir); !slices.Equal(before, after) {
		t.Errorf("Inspect changed the journal folder: %v -> %v", before, after)
	}
}

// TestInspectKeepsUnfinishedTurnsUnfinished journals, by hand, the turns a
// crash, a failure and a cancellation leave, plus a completed terminal
// without its model records: none may replay, show an answer or verify.
func TestInspectKeepsUnfinishedTurnsUnfinished(t *testing.T) {
	home := testutil.PrivateDir(t)
	dir, err := journal.EnsureDir(home)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	j, err := journal.Create(ctx, dir, journal.RunMeta{KmxVersion: "t", AgentID: "a", AgentRevision: "r", Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	model := journal.ModelIdentity{Route: "fake", Model: "fake"}
	add := func(session string, turn int, kind journal.Kind, v any) {
		t.Helper()
		p, err := journal.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Append(ctx, journal.Record{SessionID: session, Turn: turn, Kind: kind, Version: journal.SchemaVersion, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	place := func(session, example string) {
		add(session, 0, journal.KindSessionPlaced, journal.SessionPlaced{SessionID: session, Harness: "chat", Purpose: "agent", ExampleID: example, Model: model})
	}
	start := func(session string) {
		add(session, 1, journal.KindTurnStarted, journal.TurnStarted{Turn: 1, Instructions: "i", Input: "in-" + session, Model: model})
	}
	place("placed-only", "e1")
	place("crashed", "e2")
	start("crashed")
	place("failed", "e3")
	start("failed")
	add("failed", 1, journal.KindTurnTerminal, journal.TurnTerminal{Turn: 1, State: journal.StateFailed, Error: "the model call failed"})
	place("cancelled", "e4")
	start("cancelled")
	add("cancelled", 1, journal.KindTurnTerminal, journal.TurnTerminal{Turn: 1, State: journal.StateCancelled})
	place("claims-done", "e5")
	start("claims-done")
	add("claims-done", 1, journal.KindTurnTerminal, journal.TurnTerminal{Turn: 1, State: journal.StateCompleted, Answer: "looks done"})
	if err := j.Close(); err != nil { // no Finish: the run crashed
		t.Fatal(err)
	}

	in, err := readback.Inspect(ctx, dir, j.ID())
	if err != nil {
		t.Fatal(err)
	}
	if in.Run.Status != journal.RunCrashed || in.LiveCalls != 0 {
		t.Errorf("run %+v live %d", in.Run, in.LiveCalls)
	}
	want := map[string]string{"e1": readback.TurnIncomplete, "e2": readback.TurnIncomplete, "e3": readback.TurnFailed, "e4": readback.TurnCancelled, "e5": readback.TurnIncomplete}
	if len(in.Turns) != len(want) {
		t.Fatalf("turns %+v", in.Turns)
	}
	for _, tr := range in.Turns {
		if tr.State != want[tr.Example] || tr.Answer != nil || tr.Reason == "" {
			t.Errorf("%s: state %q answer %v reason %q; want %q, no answer, a reason", tr.Example, tr.State, tr.Answer, tr.Reason, want[tr.Example])
		}
	}
	if in.Turns[2].Error != "the model call failed" {
		t.Errorf("failed turn error %q", in.Turns[2].Error)
	}
	if s := in.Summary; s.Verified != 0 || s.Incomplete != 3 || s.Failed != 1 || s.Cancelled != 1 {
		t.Errorf("summary %+v", s)
	}
}

func TestInspectRefusesWithFixedText(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, home string) (dir, runID string)
		want  string
	}{
		{"not a run ID", func(t *testing.T, home string) (string, string) {
			return journal.Dir(home), "../../etc/passwd"
		}, "is not a run ID"},
		{"no journal folder yet", func(t *testing.T, home string) (string, string) {
			return journal.Dir(home), "20261130T162341.123456789Z-0a1b2c3d"
		}, "no retained runs"},
		{"no such run", func(t *testing.T, home string) (string, string) {
			d, err := journal.EnsureDir(home)
			if err != nil {
				t.Fatal(err)
			}
			return d, "20261130T162341.123456789Z-0a1b2c3d"
		}, "there is no retained run"},
		{"tampered", func(t *testing.T, home string) (string, string) {
			rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, demo(t, "release-notes.agent.md"))
			if err != nil {
				t.Fatal(err)
			}
			journaltest.UpdatePayload(t, rep.JournalPath, 3, []byte(`{"x":1}`))
			return journal.Dir(home), rep.RunID
		}, "was altered after it was written"},
		{"not a journal", func(t *testing.T, home string) (string, string) {
			d, err := journal.EnsureDir(home)
			if err != nil {
				t.Fatal(err)
			}
			id := "20261130T162341.123456789Z-0a1b2c3d"
			if err := os.WriteFile(filepath.Join(d, id+".db"), []byte("this is not a database, it only has the name"), 0o600); err != nil {
				t.Fatal(err)
			}
			return d, id
		}, "cannot be read"},
		{"broad journal file", func(t *testing.T, home string) (string, string) {
			rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, demo(t, "release-notes.agent.md"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(rep.JournalPath, 0o644); err != nil {
				t.Fatal(err)
			}
			return journal.Dir(home), rep.RunID
		}, "chmod 600"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := testutil.PrivateDir(t)
			dir, id := c.setup(t, home)
			var before []string
			_, statErr := os.Stat(dir)
			existed := statErr == nil
			if existed {
				before = testutil.DirNames(t, dir)
			}
			in, err := readback.Inspect(context.Background(), dir, id)
			r, ok := invocation.AsRefusal(err)
			if in != nil || !ok || !strings.Contains(r.Msg, c.want) || r.Next == "" {
				t.Fatalf("Inspect = %v, %v; want a refusal mentioning %q", in, err, c.want)
			}
			for _, leak := range []string{"sqlite", "SQL", "driver", "file is not a database"} {
				if strings.Contains(r.Msg, leak) {
					t.Errorf("refusal leaks %q: %s", leak, r.Msg)
				}
			}
			// Nothing is created: not the folder, not a journal.
			if !existed {
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("Inspect created %s: %v", dir, err)
				}
			} else if after := testutil.DirNames(t, dir); !slices.Equal(before, after) && c.name != "not a journal" {
				t.Errorf("Inspect changed the folder: %v -> %v", before, after)
			}
		})
	}
}

func TestInspectHonoursTheContext(t *testing.T) {
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, demo(t, "release-notes.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := readback.Inspect(ctx, journal.Dir(home), rep.RunID); !errors.Is(err, context.Canceled) {
		t.Fatalf("Inspect with a cancelled context: %v", err)
	}
}

// TestANewRunKeepsTheNewest20 is the runner's retention hook: a run that
// starts with 24 older runs in the folder leaves the newest 20, itself
// included, and never an executing one.
func TestANewRunKeepsTheNewest20(t *testing.T) {
	home := testutil.PrivateDir(t)
	dir, err := journal.EnsureDir(home)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	meta := journal.RunMeta{KmxVersion: "t", AgentID: "a", AgentRevision: "r", Command: "test"}
	live, err := journal.Create(ctx, dir, meta) // the oldest run, still executing
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	for range 23 {
		j, err := journal.Create(ctx, dir, meta)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Finish(ctx, journal.StatusFinished); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Test(ctx, Options{Options: invocation.Options{StateDir: home}}, demo(t, "release-notes.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := journal.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != journal.KeepRuns {
		t.Fatalf("%d runs after a new run, want %d", len(runs), journal.KeepRuns)
	}
	if runs[0].ID != live.ID() || runs[0].Status != journal.RunRunning {
		t.Errorf("the executing run was not kept: oldest is %+v", runs[0])
	}
	if last := runs[len(runs)-1]; last.ID != rep.RunID || last.Status != journal.StatusFinished {
		t.Errorf("newest run %+v, want the test's %s", last, rep.RunID)
	}
}
