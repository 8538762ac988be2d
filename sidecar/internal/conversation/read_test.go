package conversation

import (
	"context"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
)

func (f *fixture) history(t *testing.T) *Transcript {
	t.Helper()
	res, err := History(context.Background(), Request{File: f.file, Route: invocation.Options{StateDir: f.state}})
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	return res
}

// TestHistoryIsReadWhileATurnRuns: a history read while a turn is in flight
// (the conversation's lock held by its writer) is answered, not refused as
// busy: it shows every committed turn and the running one as pending, with
// zero model calls, and the writer's turn then completes and is journaled
// as if nobody had looked. Once the writer is gone without an outcome, the
// same read says unfinished (Discard), not pending.
func TestHistoryIsReadWhileATurnRuns(t *testing.T) {
	f := newFixture(t)
	c := f.open("")
	first := newBlockingModel()
	close(first.release)
	if turn := send(t, c, first, "first"); turn.State != StateAnswered {
		t.Fatalf("turn 1 = %+v", turn)
	}

	slow := newBlockingModel()
	done := make(chan ChatTurn, 1)
	go func() {
		turn, err := c.Send(context.Background(), SendRequest{Instructions: turnInstructions, Input: "second", Model: slow})
		if err != nil {
			t.Errorf("turn 2: %v", err)
		}
		done <- turn
	}()
	<-slow.entered
	// The turn is at the model now: read twice (the first read must not
	// leave anything behind that the second, or the writer, trips on).
	for i := 0; i < 2; i++ {
		res := f.history(t)
		if len(res.Turns) != 2 || res.Turns[0].State != StateAnswered || res.Turns[0].Answer != "slow answer" {
			t.Fatalf("read %d during the turn: turns = %+v; want turn 1 answered", i+1, res.Turns)
		}
		if p := res.Turns[1]; p.State != StatePending || p.Input != "second" || p.Answer != "" {
			t.Fatalf("read %d during the turn: turn 2 = %+v; want it pending", i+1, p)
		}
		if res.Pending != 2 || res.Unfinished != 0 || res.ReplayLiveCalls != 0 {
			t.Fatalf("read %d during the turn: pending %d, unfinished %d, replay calls %d; want 2, 0, 0", i+1, res.Pending, res.Unfinished, res.ReplayLiveCalls)
		}
	}
	// A second writer is still refused: readers do not open the way.
	wantCode(t, f.openErr(""), CodeBusy)
	close(slow.release)
	if turn := <-done; turn.State != StateAnswered || turn.N != 2 {
		t.Fatalf("turn 2 after the reads = %+v", turn)
	}
	res := f.history(t)
	if len(res.Turns) != 2 || res.Turns[1].State != StateAnswered || res.Pending != 0 {
		t.Fatalf("read after the turn: %+v (pending %d)", res.Turns, res.Pending)
	}

	// Killed mid-turn: the last turn has no outcome and nobody holds the
	// conversation, so the reader offers the discard instead.
	appendUnfinished(t, c, 3, slow.Identity(), "lost")
	if res := f.history(t); res.Pending != 3 || res.Unfinished != 0 {
		t.Fatalf("read with the writer still there: pending %d, unfinished %d; want pending 3", res.Pending, res.Unfinished)
	}
	if err := c.j.Close(); err != nil {
		t.Fatal(err)
	}
	res = f.history(t)
	if res.Pending != 0 || res.Unfinished != 3 || res.Turns[2].State != StateUnfinished {
		t.Fatalf("read after the writer died: pending %d, unfinished %d, turns %+v; want turn 3 unfinished", res.Pending, res.Unfinished, res.Turns)
	}
}
