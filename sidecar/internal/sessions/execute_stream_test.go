package sessions

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// recvExample reads one request's events from an Execute stream, up to its
// last: the verification, or the end of a turn that did not complete.
func recvExample(t *testing.T, stream sessionspb.Sessions_ExecuteClient) []*sessionspb.ExecuteEvent {
	t.Helper()
	var events []*sessionspb.ExecuteEvent
	for {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("recv after %d events: %v", len(events), err)
		}
		events = append(events, ev)
		if ev.GetVerified() != nil || (ev.GetTurn() != nil && ev.GetTurn().GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED) {
			return events
		}
	}
}

// One stream carries requests one after another: each gets its own fresh
// session, its own placed, turn and verified events, and its five records.
func TestExecuteStreamCarriesRequestsOneAfterAnother(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, fakeResolver)
	stream, err := c.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, input := range []string{"week 46", "week 47", "week 48"} {
		if err := stream.Send(agentExecute(input)); err != nil {
			t.Fatalf("send %s: %v", input, err)
		}
		events := recvExample(t, stream)
		if len(events) != 3 || events[0].GetPlaced() == nil || events[1].GetTurn() == nil || !events[2].GetVerified().GetVerified() {
			t.Fatalf("%s: events = %v, want placed, turn, verified", input, events)
		}
		id := events[0].GetPlaced().GetSessionId()
		if seen[id] {
			t.Fatalf("%s: session %s placed twice", input, id)
		}
		seen[id] = true
		recs, err := run.j.Records(context.Background(), id)
		if err != nil || len(recs) != 5 {
			t.Fatalf("%s: %d records, err %v; want the five of one turn", input, len(recs), err)
		}
		if !strings.Contains(events[1].GetTurn().GetAnswer(), input) {
			t.Errorf("%s: answer %q is not this request's", input, events[1].GetTurn().GetAnswer())
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after the client ended the stream: %v, want EOF", err)
	}
}

// The stream outlives its requests, so a request's deadline travels in the
// request: the service ends the turn at it even on a stream without one.
func TestExecuteRequestDeadlineBoundsItsTurn(t *testing.T) {
	run := newRun(t)
	m := &blockingModel{started: make(chan struct{}), observed: make(chan struct{})}
	c := startEmbedded(t, run.j, func(string, route.Identity) (route.Model, error) { return m, nil })
	stream, err := c.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := agentExecute("x")
	req.DeadlineUnixNano = time.Now().Add(200 * time.Millisecond).UnixNano()
	if err := stream.Send(req); err != nil {
		t.Fatal(err)
	}
	events := recvExample(t, stream)
	turn := events[len(events)-1].GetTurn()
	if turn.GetState() != sessionspb.TurnState_TURN_STATE_CANCELLED || turn.GetError() != harness.ErrTextDeadline {
		t.Fatalf("turn = %v, want cancelled at the deadline", turn)
	}
	select {
	case <-m.observed:
	default:
		t.Error("the turn ended while its model call was still in flight")
	}
}

// blockOn is a resolver whose model blocks on the input "block" (see
// blockingModel) and is the fake model otherwise.
type blockOn struct{ m *blockingModel }

func (b blockOn) resolve(string, route.Identity) (route.Model, error) {
	return blockOnModel(b), nil
}

type blockOnModel blockOn

func (b blockOnModel) Identity() route.Identity {
	return route.Identity{Route: route.Fake, Model: route.Fake}
}

func (b blockOnModel) Complete(ctx context.Context, req route.Request) (route.Completion, error) {
	if msgs := req.Messages; len(msgs) > 0 && msgs[len(msgs)-1].Content == "block" {
		return b.m.Complete(ctx, req)
	}
	return route.NewFake().Complete(ctx, req)
}

// Embedded.Execute reuses a stream for the next request only after a clean
// end; a cancelled request's stream is torn down with its turn (the model
// call stops, the turn is journaled cancelled) and never carries another.
func TestEmbeddedExecuteReusesOnlyCleanStreams(t *testing.T) {
	run := newRun(t)
	m := &blockingModel{started: make(chan struct{}), observed: make(chan struct{})}
	e, err := Start(context.Background(), Options{Journal: run.j, Resolve: blockOn{m}.resolve})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	verify := func(input string) {
		t.Helper()
		verified := false
		if err := e.Execute(context.Background(), agentExecute(input), func(ev *sessionspb.ExecuteEvent) error {
			verified = verified || ev.GetVerified().GetVerified()
			return nil
		}); err != nil || !verified {
			t.Fatalf("%s: verified %v, err %v", input, verified, err)
		}
	}
	for _, in := range []string{"week 45", "week 46", "week 47"} {
		verify(in)
	}
	if e.execs.openedStreams() != 1 {
		t.Fatalf("three requests in a row opened %d streams, want 1", e.execs.openedStreams())
	}

	ctx, cancel := context.WithCancel(context.Background())
	var placed string
	done := make(chan error, 1)
	go func() {
		done <- e.Execute(ctx, agentExecute("block"), func(ev *sessionspb.ExecuteEvent) error {
			if p := ev.GetPlaced(); p != nil {
				placed = p.GetSessionId()
			}
			return nil
		})
	}()
	<-m.started
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled request ended without an error")
	}
	<-m.observed
	recs := waitForKind(t, run.j, placed, journal.KindTurnTerminal)
	var term journal.TurnTerminal
	if err := journal.Decode(recs[len(recs)-1].Payload, &term); err != nil || term.State != journal.StateCancelled {
		t.Fatalf("the cancelled request's terminal = %+v (%v)", term, err)
	}

	verify("week 48")
	if e.execs.openedStreams() != 2 {
		t.Errorf("after a cancelled request %d streams were opened, want 2 (the cancelled one torn down)", e.execs.openedStreams())
	}
}
