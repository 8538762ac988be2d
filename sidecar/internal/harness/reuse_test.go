package harness

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// echoModel answers each call with "Release notes: " and the request's last
// message, so every turn's answer is its own input's.
type echoModel struct{ calls atomic.Int32 }

func (m *echoModel) Identity() route.Identity { return route.Identity{Route: "test", Model: "m1"} }

func (m *echoModel) Complete(_ context.Context, req route.Request) (route.Completion, error) {
	m.calls.Add(1)
	return route.Completion{Model: req.Model, Text: "Release notes: " + req.Messages[len(req.Messages)-1].Content, FinishReason: "stop"}, nil
}

// runOn runs one unit of work on an open stream: start (answering
// "committed" on a live turn) and, when replay is set, the replay after the
// terminal. It returns the unit's last turn's events, up to its terminal.
func runOn(t *testing.T, stream sessionspb.Harness_TurnClient, start, replay *sessionspb.HarnessTurnRequest) []*sessionspb.HarnessEvent {
	t.Helper()
	if err := stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Start{Start: start}}); err != nil {
		t.Fatal(err)
	}
	var events []*sessionspb.HarnessEvent
	live := start.GetReplay() == nil
	for {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("turn %q: %v after %v", start.GetInput(), err, events)
		}
		events = append(events, ev)
		switch {
		case ev.GetModelRequest() != nil && live:
			err = stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Committed{Committed: &sessionspb.Committed{}}})
		case ev.GetTerminal() != nil && replay == nil:
			return events
		case ev.GetTerminal() != nil:
			if ev.GetTerminal().GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
				t.Fatalf("live turn %q: %v", start.GetInput(), ev)
			}
			replay.Replay = &sessionspb.RecordedExchange{
				RequestJson:    events[0].GetModelRequest().GetRequestJson(),
				CompletionJson: events[1].GetModelCompletion().GetCompletionJson(),
			}
			err = stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Replay{Replay: replay}})
			replay, events, live = nil, nil, false
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// One stream carries unit after unit: a then_replay turn and its replay, a
// live turn, a replay of its own. Each answers from its own request alone
// (nothing of an earlier turn shows), each live turn resolves its model
// and calls it once, no replay calls one, and the stream ends when the
// caller closes its side.
func TestOneStreamCarriesTurnAfterTurn(t *testing.T) {
	m := &echoModel{}
	var resolved atomic.Int32
	c := dial(t, func(string, route.Identity) (route.Model, error) {
		resolved.Add(1)
		return m, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := c.Turn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	answer := func(events []*sessionspb.HarnessEvent) *sessionspb.TerminalEvent {
		t.Helper()
		term := events[len(events)-1].GetTerminal()
		if len(events) != 3 || term.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
			t.Fatalf("events = %v", events)
		}
		return term
	}

	live := chatRequest(PurposeAgent, "week 48")
	live.ThenReplay = true
	if term := answer(runOn(t, stream, live, chatRequest(PurposeAgent, "week 48"))); term.GetAnswer() != "Release notes: week 48" || term.GetLiveCalls() != 0 {
		t.Fatalf("then_replay unit's replay terminal = %v", term)
	}
	second := runOn(t, stream, chatRequest(PurposeJudge, "week 49"), nil)
	if term := answer(second); term.GetAnswer() != "Release notes: week 49" || term.GetLiveCalls() != 1 {
		t.Fatalf("second turn's terminal = %v", term)
	}
	replay := chatRequest(PurposeJudge, "week 49")
	replay.Replay = &sessionspb.RecordedExchange{
		RequestJson:    second[0].GetModelRequest().GetRequestJson(),
		CompletionJson: second[1].GetModelCompletion().GetCompletionJson(),
	}
	if term := answer(runOn(t, stream, replay, nil)); term.GetAnswer() != "Release notes: week 49" || term.GetLiveCalls() != 0 {
		t.Fatalf("replay-only turn's terminal = %v", term)
	}
	if m.calls.Load() != 2 || resolved.Load() != 2 {
		t.Errorf("model calls %d, resolved %d: want 2 and 2 (the live turns only)", m.calls.Load(), resolved.Load())
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if ev, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v, %v, want the stream to end", ev, err)
	}
}

// After a clean turn, anything but a turn request, or a malformed one, is
// refused and ends the stream with its status: a refusal is never followed
// by another turn.
func TestNextTurnRefusalEndsTheStream(t *testing.T) {
	for name, in := range map[string]*sessionspb.HarnessInput{
		"committed":  {Input: &sessionspb.HarnessInput_Committed{Committed: &sessionspb.Committed{}}},
		"replay":     {Input: &sessionspb.HarnessInput_Replay{Replay: chatRequest(PurposeAgent, "x")}},
		"no purpose": {Input: &sessionspb.HarnessInput_Start{Start: chatRequest("", "x")}},
	} {
		t.Run(name, func(t *testing.T) {
			m := &echoModel{}
			stream := turnStreamOn(t, m)
			runOn(t, stream, chatRequest(PurposeAgent, "x"), nil)
			if err := stream.Send(in); err != nil {
				t.Fatal(err)
			}
			if ev, err := stream.Recv(); status.Code(err) != codes.InvalidArgument {
				t.Fatalf("after the refused input: %v, %v, want InvalidArgument", ev, err)
			}
			if n := m.calls.Load(); n != 1 {
				t.Errorf("model calls = %d, want 1 (the first turn only)", n)
			}
		})
	}
}

// turnStreamOn opens a Turn stream on a harness whose every model is m; the
// stream ends with the test.
func turnStreamOn(t *testing.T, m route.Model) grpc.BidiStreamingClient[sessionspb.HarnessInput, sessionspb.HarnessEvent] {
	t.Helper()
	c := dial(t, func(string, route.Identity) (route.Model, error) { return m, nil })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := c.Turn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// A turn is bounded by the deadline in its request, not by the stream's:
// the model call in flight sees it, the turn ends cancelled with the
// deadline's text and the stream ends with DeadlineExceeded.
func TestTurnDeadlineComesWithTheRequest(t *testing.T) {
	m := &blockingModel{started: make(chan struct{}), observed: make(chan struct{})}
	stream := turnStreamOn(t, m)
	req := chatRequest(PurposeAgent, "x")
	req.DeadlineUnixNano = time.Now().Add(50 * time.Millisecond).UnixNano()
	if err := stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Start{Start: req}}); err != nil {
		t.Fatal(err)
	}
	var last *sessionspb.HarnessEvent
	for {
		ev, err := stream.Recv()
		if err != nil {
			if status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("stream ended with %v, want DeadlineExceeded", err)
			}
			break
		}
		last = ev
		if ev.GetModelRequest() != nil {
			if err := stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Committed{Committed: &sessionspb.Committed{}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	select {
	case <-m.observed:
	default:
		t.Fatal("the model call never saw the turn's deadline")
	}
	if term := last.GetTerminal(); term.GetState() != sessionspb.TurnState_TURN_STATE_CANCELLED || term.GetError() != ErrTextDeadline {
		t.Fatalf("terminal = %v, want cancelled %q", last, ErrTextDeadline)
	}
}
