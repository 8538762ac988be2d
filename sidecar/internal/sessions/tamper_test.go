package sessions

// The rule these tests hold: a tampered record, a missing record, or a
// replay that tries a live call can never produce verified=true. Each case
// is its own test so a regression names the exact hole it opened.

import (
	"context"
	"errors"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/journal/journaltest"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// finishedTurn runs one completed turn on the fake model, finishes the run
// and returns it with the session ID and each record's seq by kind.
func finishedTurn(t *testing.T) (*testRun, string, map[journal.Kind]int64) {
	t.Helper()
	run, id, recs := finishTurn(t, func(c sessionspb.SessionsClient) string {
		id := createSession(t, c)
		if resp := runTurn(t, c, id, "week 48"); resp.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
			t.Fatalf("turn = %v", resp)
		}
		return id
	})
	return run, id, firstSeqs(recs)
}

// finishTurn starts an engine on a fresh run, lets turn drive one session
// through its client (returning the session ID), closes the engine,
// finishes the run and returns it with the session ID and its records.
func finishTurn(t *testing.T, turn func(c sessionspb.SessionsClient) string) (*testRun, string, []journal.Record) {
	t.Helper()
	run := newRun(t)
	e, err := Start(context.Background(), Options{Journal: run.j, Resolve: fakeResolver})
	if err != nil {
		t.Fatal(err)
	}
	id := turn(e.Client())
	e.Close()
	recs, err := run.j.Records(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	run.finish(t)
	return run, id, recs
}

// firstSeqs maps each record kind to the seq of its first record.
func firstSeqs(recs []journal.Record) map[journal.Kind]int64 {
	seqs := make(map[journal.Kind]int64)
	for _, r := range recs {
		if _, seen := seqs[r.Kind]; !seen {
			seqs[r.Kind] = r.Seq
		}
	}
	return seqs
}

// verifyReopened verifies turn 1 of id on the finished run reopened for
// reading, as Inspect would, with a resolver that fails the test if used.
func verifyReopened(t *testing.T, run *testRun, id string) *sessionspb.VerifyTurnResponse {
	t.Helper()
	c := startEmbedded(t, run.reopen(t), noLiveResolver(t))
	v, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: id, Turn: 1})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return v
}

// recordPayload reads record seq's payload from the finished run.
func recordPayload(t *testing.T, run *testRun, seq int64) []byte {
	t.Helper()
	recs, err := run.reopen(t).Records(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Seq == seq {
			return r.Payload
		}
	}
	t.Fatalf("no record %d", seq)
	return nil
}

// rewrite decodes record seq's payload as T, applies change, and writes it
// back (then repairs the chain when rehash is set).
func rewrite[T any](t *testing.T, run *testRun, seq int64, rehash bool, change func(*T)) {
	t.Helper()
	var v T
	if err := journal.Decode(recordPayload(t, run, seq), &v); err != nil {
		t.Fatal(err)
	}
	change(&v)
	b, err := journal.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	journaltest.UpdatePayload(t, run.j.Path(), seq, b)
	if rehash {
		journaltest.RehashChain(t, run.j.Path())
	}
}

func wantRefused(t *testing.T, v *sessionspb.VerifyTurnResponse, reason string) {
	t.Helper()
	if v.GetVerified() || v.GetReason() != reason || v.GetAnswer() != "" {
		t.Errorf("verify = verified %v reason %q answer %q, want refused with %q", v.GetVerified(), v.GetReason(), v.GetAnswer(), reason)
	}
}

func TestVerifyPassesUntamperedReopenedTurn(t *testing.T) {
	run, id, _ := finishedTurn(t)
	v := verifyReopened(t, run, id)
	if !v.GetVerified() || v.GetAnswer() != "Release notes: week 48" || v.GetLiveCalls() != 0 || v.GetRecords() != 5 {
		t.Errorf("verify = %v", v)
	}
}

func TestVerifyRefusesPayloadUpdateWithoutRehash(t *testing.T) {
	for _, kind := range journal.TurnKinds {
		t.Run(string(kind), func(t *testing.T) {
			run, id, seqs := finishedTurn(t)
			// The same bytes with one extra space still decode the same:
			// only the chain can tell.
			p := recordPayload(t, run, seqs[kind])
			journaltest.UpdatePayload(t, run.j.Path(), seqs[kind], append([]byte(" "), p...))
			wantRefused(t, verifyReopened(t, run, id), ReasonTampered)
		})
	}
}

func TestVerifyRefusesPayloadUpdateWhileRunning(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, fakeResolver)
	id := createSession(t, c)
	runTurn(t, c, id, "week 48")
	recs, err := run.j.Records(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	// Even a rehashed chain cannot fool the writer, which holds its head.
	term := recs[len(recs)-1]
	journaltest.UpdatePayload(t, run.j.Path(), term.Seq, []byte(`{"turn":1,"state":"completed","answer":"forged"}`))
	journaltest.RehashChain(t, run.j.Path())
	v, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: id, Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, v, ReasonTampered)
}

func TestVerifyRefusesRehashedTerminalAnswer(t *testing.T) {
	run, id, seqs := finishedTurn(t)
	rewrite(t, run, seqs[journal.KindTurnTerminal], true, func(v *journal.TurnTerminal) { v.Answer = "Release notes: forged" })
	wantRefused(t, verifyReopened(t, run, id), ReasonReplayAnswer)
}

func TestVerifyRefusesRehashedCompletionText(t *testing.T) {
	run, id, seqs := finishedTurn(t)
	rewrite(t, run, seqs[journal.KindModelCompletion], true, func(v *journal.ModelCompletion) { v.Text = "Release notes: forged" })
	wantRefused(t, verifyReopened(t, run, id), ReasonReplayAnswer)
}

func TestVerifyRefusesRehashedInput(t *testing.T) {
	run, id, seqs := finishedTurn(t)
	rewrite(t, run, seqs[journal.KindTurnStarted], true, func(v *journal.TurnStarted) { v.Input = "week 49" })
	v := verifyReopened(t, run, id)
	wantRefused(t, v, ReasonReplayLiveCall)
	if v.GetLiveCalls() != 1 {
		t.Errorf("live calls = %d, want the refused attempt counted", v.GetLiveCalls())
	}
}

func TestVerifyRefusesRehashedInstructions(t *testing.T) {
	run, id, seqs := finishedTurn(t)
	rewrite(t, run, seqs[journal.KindTurnStarted], true, func(v *journal.TurnStarted) { v.Instructions += " Be brief." })
	wantRefused(t, verifyReopened(t, run, id), ReasonReplayLiveCall)
}

func TestVerifyRefusesRehashedRequestDigest(t *testing.T) {
	run, id, seqs := finishedTurn(t)
	rewrite(t, run, seqs[journal.KindModelRequest], true, func(v *journal.ModelRequest) { v.SHA256 = "00" + v.SHA256[2:] })
	wantRefused(t, verifyReopened(t, run, id), ReasonReplayLiveCall)
}

func TestVerifyRefusesRehashedModelIdentity(t *testing.T) {
	run, id, seqs := finishedTurn(t)
	rewrite(t, run, seqs[journal.KindTurnStarted], true, func(v *journal.TurnStarted) { v.Model.Model = "gpt-5.6-terra" })
	wantRefused(t, verifyReopened(t, run, id), ReasonModelMismatch)
}

func TestVerifyRefusesRehashedTurnNumber(t *testing.T) {
	run, id, seqs := finishedTurn(t)
	rewrite(t, run, seqs[journal.KindModelCompletion], true, func(v *journal.ModelCompletion) { v.Turn = 2 })
	wantRefused(t, verifyReopened(t, run, id), ReasonTurnMismatch)
}

func TestVerifyRefusesRehashedFailedTerminal(t *testing.T) {
	run, id, seqs := finishedTurn(t)
	rewrite(t, run, seqs[journal.KindTurnTerminal], true, func(v *journal.TurnTerminal) {
		v.State, v.Answer, v.Error = journal.StateFailed, "", "model call failed"
	})
	wantRefused(t, verifyReopened(t, run, id), ReasonNotCompleted)
}

func TestVerifyRefusesRehashedMalformedPayload(t *testing.T) {
	run, id, seqs := finishedTurn(t)
	journaltest.UpdatePayload(t, run.j.Path(), seqs[journal.KindModelCompletion], []byte(`{"turn":1,"text":"x","extra":1}`))
	journaltest.RehashChain(t, run.j.Path())
	wantRefused(t, verifyReopened(t, run, id), ReasonMalformedPrefix+string(journal.KindModelCompletion))
}

func TestVerifyRefusesDeletedRecordWithoutRehash(t *testing.T) {
	for _, kind := range journal.TurnKinds {
		t.Run(string(kind), func(t *testing.T) {
			run, id, seqs := finishedTurn(t)
			journaltest.DeleteRecord(t, run.j.Path(), seqs[kind])
			wantRefused(t, verifyReopened(t, run, id), ReasonTampered)
		})
	}
}

func TestVerifyRefusesDeletedRecordWithRehash(t *testing.T) {
	for _, kind := range journal.TurnKinds {
		t.Run(string(kind), func(t *testing.T) {
			run, id, seqs := finishedTurn(t)
			journaltest.DeleteRecord(t, run.j.Path(), seqs[kind])
			journaltest.RehashChain(t, run.j.Path())
			wantRefused(t, verifyReopened(t, run, id), ReasonMissingPrefix+string(kind))
		})
	}
}

func TestVerifyRefusesFailedTurn(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, func(string, route.Identity) (route.Model, error) {
		return failingModel{}, nil
	})
	id := createSession(t, c)
	resp := runTurn(t, c, id, "x")
	if resp.GetState() != sessionspb.TurnState_TURN_STATE_FAILED || resp.GetError() != "model call failed: status 503" || resp.GetAnswer() != "" {
		t.Fatalf("turn = %v", resp)
	}
	v, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: id, Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, v, ReasonMissingPrefix+string(journal.KindModelCompletion))
}

func TestVerifyRefusesCancelledTurn(t *testing.T) {
	run := newRun(t)
	m := &blockingModel{started: make(chan struct{}), observed: make(chan struct{})}
	c := startEmbedded(t, run.j, func(string, route.Identity) (route.Model, error) { return m, nil })
	id := createSession(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-m.started
		cancel()
	}()
	if _, err := c.RunTurn(ctx, &sessionspb.RunTurnRequest{SessionId: id, Instructions: "i", Input: "x"}); err == nil {
		t.Fatal("a cancelled turn returned no error")
	}
	waitForKind(t, run.j, id, journal.KindTurnTerminal)
	v, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: id, Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v.GetVerified() {
		t.Errorf("a cancelled turn verified: %v", v)
	}
}

// failingModel fails every call with a class-of-problem error.
type failingModel struct{}

func (failingModel) Identity() route.Identity {
	return route.Identity{Route: route.Fake, Model: route.Fake}
}

func (failingModel) Complete(context.Context, route.Request) (route.Completion, error) {
	return route.Completion{}, errors.New("status 503")
}
