package harness

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// BenchmarkLiveTurn is one chat turn on the fake model over the in-memory
// gRPC stream: the harness's share of a Sessions turn, without the journal.
func BenchmarkLiveTurn(b *testing.B) {
	c := dial(b, func(string, route.Identity) (route.Model, error) { return route.NewFake(), nil })
	req := chatRequest(PurposeAgent, "week 48")
	req.Instructions = "Reply with exactly `Release notes:` followed by the input"
	req.Model.Route, req.Model.Model = route.Fake, route.Fake
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		events, err := collect(ctx, b, c, req)
		if err != nil || len(events) != 3 {
			b.Fatalf("turn: %d events, %v", len(events), err)
		}
	}
}

// BenchmarkLiveTurnAndReplay is a chat turn and its replay, the replay on a
// stream of its own or on the live turn's stream after its terminal
// (then_replay): the difference is what one in-memory gRPC stream's setup
// and teardown cost. reused-stream runs every turn and replay on one
// stream, as Sessions does with the streams it keeps between turns.
func BenchmarkLiveTurnAndReplay(b *testing.B) {
	c := dial(b, func(string, route.Identity) (route.Model, error) { return route.NewFake(), nil })
	live := chatRequest(PurposeAgent, "week 48")
	live.Instructions = "Reply with exactly `Release notes:` followed by the input"
	live.Model.Route, live.Model.Model = route.Fake, route.Fake
	ctx := context.Background()
	events, err := collect(ctx, b, c, live)
	if err != nil || len(events) != 3 {
		b.Fatalf("turn: %d events, %v", len(events), err)
	}
	replay := proto.Clone(live).(*sessionspb.HarnessTurnRequest)
	replay.Replay = &sessionspb.RecordedExchange{
		RequestJson:    events[0].GetModelRequest().GetRequestJson(),
		CompletionJson: events[1].GetModelCompletion().GetCompletionJson(),
	}
	check := func(events []*sessionspb.HarnessEvent, err error) {
		if err != nil || len(events) != 3 || events[2].GetTerminal().GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
			b.Fatalf("turn: %v, %v", events, err)
		}
	}
	b.Run("own-stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			check(collect(ctx, b, c, live))
			check(collect(ctx, b, c, replay))
		}
	})
	b.Run("same-stream", func(b *testing.B) {
		thenReplay := proto.Clone(live).(*sessionspb.HarnessTurnRequest)
		thenReplay.ThenReplay = true
		b.ReportAllocs()
		for b.Loop() {
			check(liveAndReplay(ctx, c, thenReplay, replay))
		}
	})
	b.Run("reused-stream", func(b *testing.B) {
		thenReplay := proto.Clone(live).(*sessionspb.HarnessTurnRequest)
		thenReplay.ThenReplay = true
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := c.Turn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			check(unitOn(stream, thenReplay, replay))
		}
	})
}

// liveAndReplay runs a then_replay live turn, answering "committed", then
// sends replay on the same stream and returns the replay's events.
func liveAndReplay(ctx context.Context, c sessionspb.HarnessClient, live, replay *sessionspb.HarnessTurnRequest) ([]*sessionspb.HarnessEvent, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.Turn(ctx)
	if err != nil {
		return nil, err
	}
	return unitOn(stream, live, replay)
}

// unitOn runs a then_replay live turn and its replay on an open stream,
// which stays open for the next unit, and returns the replay's events.
func unitOn(stream sessionspb.Harness_TurnClient, live, replay *sessionspb.HarnessTurnRequest) ([]*sessionspb.HarnessEvent, error) {
	if err := stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Start{Start: live}}); err != nil {
		return nil, err
	}
	var events []*sessionspb.HarnessEvent
	for replaying := false; ; {
		ev, err := stream.Recv()
		if err != nil {
			return events, err
		}
		switch {
		case !replaying && ev.GetModelRequest() != nil:
			err = stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Committed{Committed: &sessionspb.Committed{}}})
		case !replaying && ev.GetTerminal() != nil:
			replaying = true
			err = stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Replay{Replay: replay}})
		case replaying:
			events = append(events, ev)
			if ev.GetTerminal() != nil {
				return events, nil
			}
		}
		if err != nil {
			return events, err
		}
	}
}
