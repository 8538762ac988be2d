package sessions

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// execute runs one request on its own Execute stream, ends the stream and
// returns its events in order.
func execute(t testing.TB, c sessionspb.SessionsClient, req *sessionspb.ExecuteRequest) ([]*sessionspb.ExecuteEvent, error) {
	t.Helper()
	stream, err := c.Execute(context.Background())
	if err != nil {
		return nil, err
	}
	if err := stream.Send(req); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if err := stream.CloseSend(); err != nil {
		return nil, err
	}
	return testutil.RecvAll(stream.Recv, nil)
}

func agentExecute(input string) *sessionspb.ExecuteRequest {
	return &sessionspb.ExecuteRequest{
		Session:      &sessionspb.CreateSessionRequest{Purpose: harness.PurposeAgent, ExampleId: "weekly", Model: fakeIdentity},
		Instructions: fakeInstructions, Input: input,
	}
}

// One call places the session, runs the turn and verifies it: the events
// come in that order, the five records are the ones CreateSession and
// RunTurn write, and the verification is the one VerifyTurn gives.
func TestExecutePlacesRunsAndVerifiesInOneCall(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, fakeResolver)
	events, err := execute(t, c, agentExecute("week 48"))
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if len(events) != 3 || events[0].GetPlaced() == nil || events[1].GetTurn() == nil || events[2].GetVerified() == nil {
		t.Fatalf("events = %v, want placed, turn, verified", events)
	}
	id := events[0].GetPlaced().GetSessionId()
	if h := events[0].GetPlaced().GetHarness(); id == "" || h != harness.Chat {
		t.Fatalf("placed = %v", events[0].GetPlaced())
	}
	turn := events[1].GetTurn()
	if turn.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED || turn.GetAnswer() != "Release notes: week 48" || turn.GetTurn() != 1 {
		t.Fatalf("turn = %v", turn)
	}
	v := events[2].GetVerified()
	if !v.GetVerified() || v.GetAnswer() != "Release notes: week 48" || v.GetLiveCalls() != 0 || v.GetRecords() != 5 {
		t.Fatalf("verified = %v", v)
	}
	recs, err := run.reopen(t).Records(context.Background(), id)
	if err != nil {
		t.Fatalf("records: %v", err)
	}
	if len(recs) != len(journal.TurnKinds) {
		t.Fatalf("%d records, want %d", len(recs), len(journal.TurnKinds))
	}
	for i, r := range recs {
		if r.Kind != journal.TurnKinds[i] {
			t.Errorf("record %d is %s, want %s", i, r.Kind, journal.TurnKinds[i])
		}
	}
	// The same turn verifies again through VerifyTurn, from the journal.
	again, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: id, Turn: 1})
	if err != nil || !again.GetVerified() {
		t.Fatalf("verify again = %v, %v", again, err)
	}
}

// A turn that fails is journaled and reported, and not verified.
func TestExecuteFailedTurnIsNotVerified(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, func(string, route.Identity) (route.Model, error) { return failingModel{}, nil })
	events, err := execute(t, c, agentExecute("x"))
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if len(events) != 2 || events[1].GetTurn().GetState() != sessionspb.TurnState_TURN_STATE_FAILED {
		t.Fatalf("events = %v, want placed and a failed turn, no verification", events)
	}
	recs, err := run.reopen(t).Records(context.Background(), events[0].GetPlaced().GetSessionId())
	if err != nil {
		t.Fatalf("records: %v", err)
	}
	if n := len(recs); n != 4 || recs[n-1].Kind != journal.KindTurnTerminal {
		t.Fatalf("records = %d, last %s; want placed, started, request, terminal", n, recs[n-1].Kind)
	}
}

// A refused session request journals nothing.
func TestExecuteRefusalJournalsNothing(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, fakeResolver)
	req := agentExecute("x")
	req.Session.Purpose = "other"
	if _, err := execute(t, c, req); err == nil {
		t.Fatal("execute with an unknown purpose was accepted")
	}
	recs, err := run.reopen(t).Records(context.Background(), "")
	if err != nil {
		t.Fatalf("records: %v", err)
	}
	if len(recs) != 0 {
		t.Fatalf("a refused request journaled %d records", len(recs))
	}
}

// sendChecker is a model that, the moment it is called (before it answers,
// without waiting), checks through a second connection that the turn's
// model.request record is already committed: the request is durable before
// the send, so a kill can never hide a send.
type sendChecker struct {
	run   *testRun
	t     *testing.T
	calls *atomic.Int32
}

func (m sendChecker) Identity() route.Identity {
	return route.Identity{Route: route.Fake, Model: route.Fake}
}

func (m sendChecker) Complete(ctx context.Context, req route.Request) (route.Completion, error) {
	m.calls.Add(1)
	j, err := journal.Open(ctx, m.run.dir, m.run.j.ID())
	if err != nil {
		return route.Completion{}, err
	}
	defer j.Close()
	recs, err := j.Records(ctx, "")
	if err != nil {
		return route.Completion{}, err
	}
	if n := len(recs); n == 0 || recs[n-1].Kind != journal.KindModelRequest {
		m.t.Errorf("the model was called before its model.request record was committed (%d records)", n)
	}
	return route.Completion{Model: req.Model, Text: "ok", FinishReason: "stop"}, nil
}

func TestRequestIsCommittedBeforeTheSend(t *testing.T) {
	run := newRun(t)
	var calls atomic.Int32
	c := startEmbedded(t, run.j, func(string, route.Identity) (route.Model, error) {
		return sendChecker{run: run, t: t, calls: &calls}, nil
	})
	events, err := execute(t, c, agentExecute("x"))
	if err != nil || len(events) != 3 || !events[2].GetVerified().GetVerified() {
		t.Fatalf("execute = %v, %v", events, err)
	}
	id := createSession(t, c)
	if resp := runTurn(t, c, id, "y"); resp.GetAnswer() != "ok" {
		t.Fatalf("run turn = %v", resp)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("model calls = %d, want 2", n)
	}
}

// A turn of a multi-turn example carries its history: the model receives
// it (the fake's turn number counts its user messages), turn.started
// journals it, and the turn verifies from the journal alone; a caller's
// different history is no history of this turn. The verification carries
// the journaled duration and the fake model's usage.
func TestExecuteWithHistoryJournalsAndVerifiesIt(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, fakeResolver)
	history := []*sessionspb.ChatMessage{{Role: harness.RoleUser, Content: "one"}, {Role: harness.RoleAssistant, Content: "Turn 1: one"}}
	req := agentExecute("two")
	req.Instructions, req.History = "Reply with the turn number", history
	events, err := execute(t, c, req)
	if err != nil || len(events) != 3 {
		t.Fatalf("execute = %v, %v", events, err)
	}
	v := events[2].GetVerified()
	if !v.GetVerified() || v.GetAnswer() != "Turn 2: two" {
		t.Fatalf("verified = %v", v)
	}
	if v.GetDurationUs() <= 0 || v.GetUsage() == nil || v.GetUsage().GetTotalTokens() != v.GetUsage().GetPromptTokens()+v.GetUsage().GetCompletionTokens() || v.GetUsage().GetTotalTokens() == 0 {
		t.Fatalf("measures = %d us, usage %v", v.GetDurationUs(), v.GetUsage())
	}
	id := events[0].GetPlaced().GetSessionId()
	recs, err := run.reopen(t).Records(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var started journal.TurnStarted
	if err := journal.Decode(recs[1].Payload, &started); err != nil || len(started.History) != 2 || started.History[1].Content != "Turn 1: one" {
		t.Fatalf("turn.started = %s (%v)", recs[1].Payload, err)
	}
	if again, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: id, Turn: 1}); err != nil || !again.GetVerified() {
		t.Fatalf("verify from the journal alone = %v, %v", again, err)
	}
	other := []*sessionspb.ChatMessage{{Role: harness.RoleUser, Content: "one"}, {Role: harness.RoleAssistant, Content: "Turn 1: changed"}}
	if bad, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: id, Turn: 1, History: other}); err != nil || bad.GetVerified() {
		t.Fatalf("verify with another history = %v, %v", bad, err)
	}
}
