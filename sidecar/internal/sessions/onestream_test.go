package sessions

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessions/sessionspb"
)

// watchedHarness counts the harness streams Sessions opens and keeps the
// replay inputs it sends on a live turn's stream.
type watchedHarness struct {
	sessionspb.HarnessClient
	mu      sync.Mutex
	streams int
	replays []*sessionspb.HarnessTurnRequest
}

func (h *watchedHarness) Turn(ctx context.Context, opts ...grpc.CallOption) (harnessStream, error) {
	s, err := h.HarnessClient.Turn(ctx, opts...)
	h.mu.Lock()
	h.streams++
	h.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return watchedStream{s, h}, nil
}

type watchedStream struct {
	harnessStream
	h *watchedHarness
}

// seen returns the streams opened and the replay inputs sent so far.
func (h *watchedHarness) seen() (int, []*sessionspb.HarnessTurnRequest) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams, append([]*sessionspb.HarnessTurnRequest(nil), h.replays...)
}

func (s watchedStream) Send(in *sessionspb.HarnessInput) error {
	if r := in.GetReplay(); r != nil {
		s.h.mu.Lock()
		s.h.replays = append(s.h.replays, r)
		s.h.mu.Unlock()
	}
	return s.harnessStream.Send(in)
}

// Execute runs an example's turn and its replay on one harness stream: the
// replay input it sends there carries the request and completion exactly as
// the journal holds them, the replay makes no model call, and the live
// model is resolved once per example. RunTurn and VerifyTurn (a
// conversation) still take a stream each.
func TestExecuteReplaysOnItsTurnStreamWhatTheJournalHolds(t *testing.T) {
	run := newRun(t)
	var resolved atomic.Int32
	h := &watchedHarness{}
	e, err := start(context.Background(), Options{Journal: run.j, Resolve: func(string, route.Identity) (route.Model, error) {
		resolved.Add(1)
		return route.NewFake(), nil
	}}, func(c sessionspb.HarnessClient) sessionspb.HarnessClient {
		h.HarnessClient = c
		return h
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	c := e.Client()
	const examples = 3
	ids := make([]string, examples)
	for i := range ids {
		events, err := execute(t, c, agentExecute("week 48"))
		if err != nil || len(events) != 3 {
			t.Fatalf("execute: %v, %v", events, err)
		}
		if v := events[2].GetVerified(); !v.GetVerified() || v.GetLiveCalls() != 0 {
			t.Fatalf("verified = %v", v)
		}
		ids[i] = events[0].GetPlaced().GetSessionId()
	}
	streams, replays := h.seen()
	if streams != examples || len(replays) != examples {
		t.Fatalf("%d examples took %d harness streams and %d replay inputs, want one of each per example", examples, streams, len(replays))
	}
	if n := resolved.Load(); n != examples {
		t.Fatalf("models resolved = %d, want %d (one per live turn, none for a replay)", n, examples)
	}
	reader := run.reopen(t)
	for i, id := range ids {
		recs, err := reader.Records(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		want := map[journal.Kind][]byte{}
		for _, r := range recs {
			want[r.Kind] = r.Payload
		}
		got := replays[i]
		if got.GetSessionId() != id || !bytes.Equal(got.GetReplay().GetRequestJson(), want[journal.KindModelRequest]) ||
			!bytes.Equal(got.GetReplay().GetCompletionJson(), want[journal.KindModelCompletion]) {
			t.Errorf("example %d: the replay input is not the journaled turn", i)
		}
	}

	id := createSession(t, c)
	if resp := runTurn(t, c, id, "week 49"); resp.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
		t.Fatalf("run turn = %v", resp)
	}
	v, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: id, Turn: 1})
	if err != nil || !v.GetVerified() || v.GetLiveCalls() != 0 {
		t.Fatalf("verify turn = %v, %v", v, err)
	}
	if streams, replays = h.seen(); streams != examples+2 || len(replays) != examples {
		t.Fatalf("run + verify took %d streams in all and %d replay inputs, want %d and %d", streams, len(replays), examples+2, examples)
	}
}
