package harness

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// liveThenReplay opens a then_replay live chat turn on a stub model,
// answers "committed" and reads it to its terminal. It returns the open
// stream, the live turn's events and the resolver and model call counts.
func liveThenReplay(t *testing.T) (sessionspb.Harness_TurnClient, []*sessionspb.HarnessEvent, *atomic.Int32, *stubModel) {
	t.Helper()
	m := &stubModel{text: "Release notes: hi"}
	var resolved atomic.Int32
	c := dial(t, func(string, route.Identity) (route.Model, error) {
		resolved.Add(1)
		return m, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := c.Turn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := chatRequest(PurposeAgent, "hi")
	req.ThenReplay = true
	if err := stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Start{Start: req}}); err != nil {
		t.Fatal(err)
	}
	var events []*sessionspb.HarnessEvent
	for {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("live turn: %v after %d events", err, len(events))
		}
		events = append(events, ev)
		if ev.GetModelRequest() != nil {
			if err := stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Committed{Committed: &sessionspb.Committed{}}}); err != nil {
				t.Fatal(err)
			}
		}
		if ev.GetTerminal() != nil {
			break
		}
	}
	if len(events) != 3 || events[2].GetTerminal().GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
		t.Fatalf("live turn events = %v", events)
	}
	return stream, events, &resolved, m
}

// A then_replay live turn's stream carries the replay that follows it. The
// replay answers from the replay input alone (here a recording whose text
// differs from what the live model said, so an answer from the live turn
// would show), makes no model call and resolves no model.
func TestThenReplayRunsTheReplayInputOnTheSameStream(t *testing.T) {
	stream, live, resolved, m := liveThenReplay(t)
	var comp journal.ModelCompletion
	if err := journal.Decode(live[1].GetModelCompletion().GetCompletionJson(), &comp); err != nil {
		t.Fatal(err)
	}
	comp.Text = "Release notes: as recorded"
	compJSON, err := journal.Encode(comp)
	if err != nil {
		t.Fatal(err)
	}
	req := chatRequest(PurposeAgent, "hi")
	req.Replay = &sessionspb.RecordedExchange{RequestJson: live[0].GetModelRequest().GetRequestJson(), CompletionJson: compJSON}
	if err := stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Replay{Replay: req}}); err != nil {
		t.Fatal(err)
	}
	var replayed []*sessionspb.HarnessEvent
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		replayed = append(replayed, ev)
		if ev.GetTerminal() != nil {
			// Done with the stream: it ends.
			if err := stream.CloseSend(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(replayed) != 3 {
		t.Fatalf("replay events = %v, want request, completion, terminal", replayed)
	}
	term := replayed[2].GetTerminal()
	if term.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED || term.GetAnswer() != comp.Text || term.GetLiveCalls() != 0 {
		t.Fatalf("replay terminal = %v, want completed with the recorded answer and 0 live calls", term)
	}
	if string(replayed[0].GetModelRequest().GetRequestJson()) != string(live[0].GetModelRequest().GetRequestJson()) {
		t.Errorf("replayed request differs from the live one")
	}
	if got := m.calls.Load(); got != 1 {
		t.Errorf("model calls = %d, want 1 (the live send only)", got)
	}
	if got := resolved.Load(); got != 1 {
		t.Errorf("models resolved = %d, want 1 (the live turn only)", got)
	}
}

// After a then_replay turn's terminal only a replay may follow: a second
// live start, or a replay input without a recording, is refused and calls
// no model.
func TestThenReplayRefusesAnythingButAReplay(t *testing.T) {
	for name, in := range map[string]*sessionspb.HarnessInput{
		"live start":          {Input: &sessionspb.HarnessInput_Start{Start: chatRequest(PurposeAgent, "again")}},
		"replay no recording": {Input: &sessionspb.HarnessInput_Replay{Replay: chatRequest(PurposeAgent, "again")}},
		"committed":           {Input: &sessionspb.HarnessInput_Committed{Committed: &sessionspb.Committed{}}},
	} {
		t.Run(name, func(t *testing.T) {
			stream, _, resolved, m := liveThenReplay(t)
			if err := stream.Send(in); err != nil {
				t.Fatal(err)
			}
			_, err := stream.Recv()
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("after the terminal: %v, want InvalidArgument", err)
			}
			if m.calls.Load() != 1 || resolved.Load() != 1 {
				t.Errorf("model calls %d, resolved %d, want 1 and 1", m.calls.Load(), resolved.Load())
			}
		})
	}
}

// A caller that wants no replay after all closes its side: the stream ends.
func TestThenReplayEndsWhenTheCallerCloses(t *testing.T) {
	stream, _, _, _ := liveThenReplay(t)
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if ev, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v, %v, want the stream to end", ev, err)
	}
}
