package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// watchedHarness counts the harness streams Sessions opens and logs, in
// order, the turn requests and replay inputs it sends on each.
type watchedHarness struct {
	sessionspb.HarnessClient
	mu      sync.Mutex
	streams []context.Context // each stream's context, by stream number
	sent    []sentInput
}

// sentInput is a turn request (start) or replay input and the number of the
// stream it went on.
type sentInput struct {
	stream int
	start  *sessionspb.HarnessTurnRequest
	replay *sessionspb.HarnessTurnRequest
}

func (h *watchedHarness) Turn(ctx context.Context, opts ...grpc.CallOption) (harnessStream, error) {
	s, err := h.HarnessClient.Turn(ctx, opts...)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.streams = append(h.streams, ctx)
	if err != nil {
		return nil, err
	}
	return watchedStream{s, h, len(h.streams) - 1}, nil
}

type watchedStream struct {
	harnessStream
	h  *watchedHarness
	id int
}

// seen returns the streams opened and the inputs sent so far.
func (h *watchedHarness) seen() (int, []sentInput) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams), append([]sentInput(nil), h.sent...)
}

func (s watchedStream) Send(in *sessionspb.HarnessInput) error {
	if in.GetStart() != nil || in.GetReplay() != nil {
		s.h.mu.Lock()
		s.h.sent = append(s.h.sent, sentInput{stream: s.id, start: in.GetStart(), replay: in.GetReplay()})
		s.h.mu.Unlock()
	}
	return s.harnessStream.Send(in)
}

// startWatched starts the embedded services with a watched harness client.
func startWatched(t *testing.T, run *testRun, resolve harness.Resolver) (*Embedded, *watchedHarness) {
	t.Helper()
	h := &watchedHarness{}
	e, err := start(context.Background(), Options{Journal: run.j, Resolve: resolve}, func(c sessionspb.HarnessClient) sessionspb.HarnessClient {
		h.HarnessClient = c
		return h
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, h
}

// Execute runs an example's turn and its replay on one harness stream: the
// replay input it sends there, right after the turn, carries the request and
// completion exactly as the journal holds them, the replay makes no model
// call, and the live model is resolved once per example. Examples one after
// another run on one stream (each unit ended cleanly), and so do RunTurn and
// VerifyTurn's replay of its own after them. Close ends every stream.
func TestExecuteReplaysOnItsTurnStreamWhatTheJournalHolds(t *testing.T) {
	run := newRun(t)
	var resolved atomic.Int32
	e, h := startWatched(t, run, func(string, route.Identity) (route.Model, error) {
		resolved.Add(1)
		return route.NewFake(), nil
	})
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
	streams, sent := h.seen()
	if streams != 1 || len(sent) != 2*examples {
		t.Fatalf("%d examples took %d harness streams and %d inputs, want 1 stream and a turn and a replay per example", examples, streams, len(sent))
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
		live, got := sent[2*i], sent[2*i+1]
		if live.start.GetSessionId() != id || !live.start.GetThenReplay() || got.replay == nil || got.stream != live.stream {
			t.Fatalf("example %d: inputs %+v, %+v; want its then_replay turn, then its replay on the same stream", i, live, got)
		}
		if got.replay.GetSessionId() != id || !bytes.Equal(got.replay.GetReplay().GetRequestJson(), want[journal.KindModelRequest]) ||
			!bytes.Equal(got.replay.GetReplay().GetCompletionJson(), want[journal.KindModelCompletion]) {
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
	streams, sent = h.seen()
	if streams != 1 || len(sent) != 2*examples+2 {
		t.Fatalf("run + verify took %d streams in all and %d inputs, want 1 and %d", streams, len(sent), 2*examples+2)
	}
	if run, verify := sent[2*examples].start, sent[2*examples+1].start; run.GetThenReplay() || run.GetReplay() != nil || verify.GetReplay() == nil {
		t.Fatalf("run + verify sent %v then %v, want a live turn then a replay of its own", run, verify)
	}
	e.Close()
	for i, ctx := range h.streams {
		if ctx.Err() == nil {
			t.Errorf("stream %d is still open after Close", i)
		}
	}
}

// Examples in parallel share a few harness streams: never more than are in
// flight at once, however many examples run, and every one verifies.
func TestHarnessStreamsAreReusedAcrossExamples(t *testing.T) {
	run := newRun(t)
	e, h := startWatched(t, run, fakeResolver)
	const examples, workers = 40, 4
	var wg sync.WaitGroup
	errs := make(chan error, examples)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < examples; i += workers {
				events, err := execute(t, e.Client(), agentExecute(fmt.Sprintf("week %d", i)))
				if err != nil || len(events) != 3 || !events[2].GetVerified().GetVerified() {
					errs <- fmt.Errorf("example %d: %v, %v", i, events, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	streams, sent := h.seen()
	if streams > workers || len(sent) != 2*examples {
		t.Fatalf("%d examples on %d workers took %d harness streams and %d inputs; want at most %d streams and %d inputs",
			examples, workers, streams, len(sent), workers, 2*examples)
	}
	if idle := e.svc.streams.idleStreams(); idle != streams {
		t.Errorf("%d streams idle after the run, want all %d", idle, streams)
	}
}

// scriptedModel follows the fake model, except that an input "fail" fails
// the call and an input "block" blocks it until its context ends.
type scriptedModel struct{ started chan struct{} }

func (m scriptedModel) Identity() route.Identity {
	return route.Identity{Route: route.Fake, Model: route.Fake}
}

func (m scriptedModel) Complete(ctx context.Context, req route.Request) (route.Completion, error) {
	switch req.Messages[len(req.Messages)-1].Content {
	case "fail":
		return route.Completion{}, errors.New("status 503")
	case "block":
		m.started <- struct{}{}
		<-ctx.Done()
		return route.Completion{}, ctx.Err()
	}
	return route.NewFake().Complete(ctx, req)
}

// A turn that fails, or is cancelled, never leaves its harness stream for
// another turn: the stream is cancelled and receives nothing more, and the
// next example runs on a fresh stream and verifies.
func TestFailedOrCancelledTurnsStreamIsNeverReused(t *testing.T) {
	run := newRun(t)
	m := scriptedModel{started: make(chan struct{}, 1)}
	e, h := startWatched(t, run, func(string, route.Identity) (route.Model, error) { return m, nil })
	c := e.Client()
	ok := func() {
		t.Helper()
		events, err := execute(t, c, agentExecute("week 48"))
		if err != nil || len(events) != 3 || !events[2].GetVerified().GetVerified() {
			t.Fatalf("execute: %v, %v", events, err)
		}
	}
	// lastStream is the stream the last input went on.
	lastStream := func() int {
		_, sent := h.seen()
		return sent[len(sent)-1].stream
	}
	ok()
	events, err := execute(t, c, agentExecute("fail"))
	if err != nil || len(events) != 2 || events[1].GetTurn().GetState() != sessionspb.TurnState_TURN_STATE_FAILED {
		t.Fatalf("failing execute: %v, %v", events, err)
	}
	failed := lastStream()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		stream, err := c.Execute(ctx)
		if err == nil {
			err = stream.Send(agentExecute("block"))
		}
		if err == nil {
			_, err = testutil.RecvAll(stream.Recv, nil)
		}
		done <- err
	}()
	<-m.started
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled execute: %v, want Canceled", err)
	}
	cancelled := lastStream()
	if cancelled == failed {
		t.Fatal("the turn after a failed one ran on the failed turn's stream")
	}
	ok()
	next := lastStream()
	if next == failed || next == cancelled {
		t.Fatalf("the turn after a cancelled one ran on stream %d (failed %d, cancelled %d)", next, failed, cancelled)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, bad := range []int{failed, cancelled} {
		if h.streams[bad].Err() == nil {
			t.Errorf("stream %d of a turn that did not complete is still open", bad)
		}
	}
	if len(h.streams) != 3 {
		t.Errorf("%d streams, want 3: the first (kept for the failing turn), a fresh one after each turn that did not complete", len(h.streams))
	}
}
