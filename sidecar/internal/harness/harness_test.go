package harness

import (
	"context"
	"errors"
	"io"
	"net"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// stubModel answers every call with a fixed completion or error and counts
// the calls it receives.
type stubModel struct {
	id    route.Identity
	text  string
	err   error
	calls atomic.Int32
}

func (m *stubModel) Identity() route.Identity { return m.id }

func (m *stubModel) Complete(_ context.Context, req route.Request) (route.Completion, error) {
	m.calls.Add(1)
	if m.err != nil {
		return route.Completion{}, m.err
	}
	return route.Completion{Model: req.Model, Text: m.text, FinishReason: "stop"}, nil
}

// blockingModel blocks until its context ends and reports that it saw it.
type blockingModel struct {
	started  chan struct{}
	observed chan struct{}
}

func (m *blockingModel) Identity() route.Identity {
	return route.Identity{Route: "test", Model: "block"}
}

func (m *blockingModel) Complete(ctx context.Context, _ route.Request) (route.Completion, error) {
	close(m.started)
	<-ctx.Done()
	close(m.observed)
	return route.Completion{}, ctx.Err()
}

func dial(t testing.TB, resolve Resolver) sessionspb.HarnessClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	sessionspb.RegisterHarnessServer(srv, New(resolve))
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial harness: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
	})
	return sessionspb.NewHarnessClient(conn)
}

// collect runs one turn and returns every event until the stream ends. On
// a live turn it answers "committed" to each model request and tool call,
// as Sessions does once the record is journaled. After the terminal it
// closes its side: a stream carries turns until its caller is done.
func collect(ctx context.Context, t testing.TB, c sessionspb.HarnessClient, req *sessionspb.HarnessTurnRequest) ([]*sessionspb.HarnessEvent, error) {
	t.Helper()
	stream, err := c.Turn(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Start{Start: req}}); err != nil {
		return nil, err
	}
	return testutil.RecvAll(stream.Recv, func(ev *sessionspb.HarnessEvent) error {
		switch ev.GetEvent().(type) {
		case *sessionspb.HarnessEvent_Terminal:
			return stream.CloseSend()
		case *sessionspb.HarnessEvent_ModelRequest, *sessionspb.HarnessEvent_ToolCall:
			if req.GetReplay() != nil {
				return nil
			}
			return stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Committed{Committed: &sessionspb.Committed{}}})
		}
		return nil
	})
}

func chatRequest(purpose, input string) *sessionspb.HarnessTurnRequest {
	return &sessionspb.HarnessTurnRequest{
		SessionId: "s1", Harness: Chat, Purpose: purpose, Turn: 1,
		Model:        &sessionspb.ModelIdentity{Route: "test", Model: "m1"},
		Instructions: "Reply briefly.", Input: input,
	}
}

func TestLiveTurnEvents(t *testing.T) {
	tests := []struct {
		name       string
		model      *stubModel
		resolveErr error
		input      string
		wantKinds  string
		wantState  sessionspb.TurnState
		wantAnswer string
		wantError  string
		wantCalls  int32
	}{
		{name: "completed", model: &stubModel{text: "Release notes: hi"}, input: "hi",
			wantKinds: "request,completion,terminal", wantState: sessionspb.TurnState_TURN_STATE_COMPLETED,
			wantAnswer: "Release notes: hi", wantCalls: 1},
		{name: "model error keeps fixed text", model: &stubModel{err: errors.New("status 503")}, input: "hi",
			wantKinds: "request,terminal", wantState: sessionspb.TurnState_TURN_STATE_FAILED,
			wantError: "model call failed: status 503", wantCalls: 1},
		{name: "model error echoing the input is dropped", model: &stubModel{err: errors.New("bad prompt: secret-input-text")},
			input: "secret-input-text", wantKinds: "request,terminal", wantState: sessionspb.TurnState_TURN_STATE_FAILED,
			wantError: "model call failed", wantCalls: 1},
		{name: "resolver error", model: &stubModel{}, resolveErr: errors.New("no endpoint configured"), input: "hi",
			wantKinds: "terminal", wantState: sessionspb.TurnState_TURN_STATE_FAILED,
			wantError: "model route unavailable: no endpoint configured", wantCalls: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, func(purpose string, id route.Identity) (route.Model, error) {
				if purpose != PurposeAgent || id != (route.Identity{Route: "test", Model: "m1"}) {
					t.Errorf("resolver got purpose %q identity %+v", purpose, id)
				}
				return tt.model, tt.resolveErr
			})
			req := chatRequest(PurposeAgent, tt.input)
			events, err := collect(context.Background(), t, c, req)
			if err != nil {
				t.Fatalf("turn: %v", err)
			}
			var kinds []string
			for _, ev := range events {
				switch e := ev.Event.(type) {
				case *sessionspb.HarnessEvent_ModelRequest:
					kinds = append(kinds, "request")
					var mr journal.ModelRequest
					if err := journal.Decode(e.ModelRequest.GetRequestJson(), &mr); err != nil {
						t.Fatalf("request payload: %v", err)
					}
					sum, size, _ := RequestDigest(route.ChatRequest("m1", req.Instructions, req.Input))
					if mr != (journal.ModelRequest{Turn: 1, Model: "m1", SHA256: sum, Bytes: size}) {
						t.Errorf("request payload = %+v", mr)
					}
				case *sessionspb.HarnessEvent_ModelCompletion:
					kinds = append(kinds, "completion")
					var mc journal.ModelCompletion
					if err := journal.Decode(e.ModelCompletion.GetCompletionJson(), &mc); err != nil {
						t.Fatalf("completion payload: %v", err)
					}
					if !reflect.DeepEqual(mc, journal.ModelCompletion{Turn: 1, Model: "m1", Text: tt.wantAnswer, FinishReason: "stop"}) {
						t.Errorf("completion payload = %+v", mc)
					}
				case *sessionspb.HarnessEvent_Terminal:
					kinds = append(kinds, "terminal")
					term := e.Terminal
					if term.State != tt.wantState || term.Answer != tt.wantAnswer || term.Error != tt.wantError || term.LiveCalls != tt.wantCalls {
						t.Errorf("terminal = %v %q %q %d, want %v %q %q %d", term.State, term.Answer, term.Error, term.LiveCalls,
							tt.wantState, tt.wantAnswer, tt.wantError, tt.wantCalls)
					}
				}
			}
			if got := strings.Join(kinds, ","); got != tt.wantKinds {
				t.Errorf("events = %s, want %s", got, tt.wantKinds)
			}
			if got := tt.model.calls.Load(); got != tt.wantCalls {
				t.Errorf("model calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestPurposeSelectsModel(t *testing.T) {
	agent := &stubModel{text: "agent answer"}
	judge := &stubModel{text: "judge answer"}
	c := dial(t, func(purpose string, _ route.Identity) (route.Model, error) {
		if purpose == PurposeJudge {
			return judge, nil
		}
		return agent, nil
	})
	for _, tt := range []struct{ purpose, want string }{{PurposeAgent, "agent answer"}, {PurposeJudge, "judge answer"}} {
		events, err := collect(context.Background(), t, c, chatRequest(tt.purpose, "x"))
		if err != nil {
			t.Fatalf("%s turn: %v", tt.purpose, err)
		}
		if got := events[len(events)-1].GetTerminal().GetAnswer(); got != tt.want {
			t.Errorf("%s answer = %q, want %q", tt.purpose, got, tt.want)
		}
	}
}

func TestCancelStopsInFlightCall(t *testing.T) {
	m := &blockingModel{started: make(chan struct{}), observed: make(chan struct{})}
	c := dial(t, func(string, route.Identity) (route.Model, error) { return m, nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := collect(ctx, t, c, chatRequest(PurposeAgent, "x"))
		done <- err
	}()
	select {
	case <-m.started:
	case <-time.After(10 * time.Second):
		t.Fatal("model was never called")
	}
	cancel()
	select {
	case <-m.observed:
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight model call did not see the cancellation")
	}
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Errorf("turn error = %v, want Canceled", err)
	}
}

// recordingStream is a server stream that keeps what the harness sends, so a
// test can see the terminal event a cancelled caller would never receive. It
// gives the harness start first, then "committed" whenever it waits.
type recordingStream struct {
	grpc.ServerStream
	ctx    context.Context
	start  *sessionspb.HarnessTurnRequest
	sent   bool
	events []*sessionspb.HarnessEvent
}

func (s *recordingStream) Context() context.Context { return s.ctx }

// Recv gives the turn request, then "committed" whenever the harness waits
// for it, and once the terminal is sent the end of the stream (a caller
// done with it).
func (s *recordingStream) Recv() (*sessionspb.HarnessInput, error) {
	if s.ended() {
		return nil, io.EOF
	}
	if !s.sent {
		s.sent = true
		return &sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Start{Start: s.start}}, nil
	}
	return &sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Committed{Committed: &sessionspb.Committed{}}}, nil
}

// ended reports whether the harness has sent a terminal event.
func (s *recordingStream) ended() bool {
	return len(s.events) > 0 && s.events[len(s.events)-1].GetTerminal() != nil
}

func (s *recordingStream) Send(ev *sessionspb.HarnessEvent) error {
	s.events = append(s.events, ev)
	return nil
}

func TestCancelledTurnEndsCancelled(t *testing.T) {
	tests := []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		wantText string
	}{
		{name: "cancel", ctx: func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, wantText: ErrTextCancelled},
		{name: "deadline", ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, wantText: ErrTextDeadline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &blockingModel{started: make(chan struct{}), observed: make(chan struct{})}
			ctx, cancel := tt.ctx()
			defer cancel()
			go func() {
				<-m.started
				if tt.name == "cancel" {
					cancel()
				}
			}()
			s := New(func(string, route.Identity) (route.Model, error) { return m, nil })
			stream := &recordingStream{ctx: ctx, start: chatRequest(PurposeAgent, "x")}
			err := s.Turn(stream)
			if c := status.Code(err); c != codes.Canceled && c != codes.DeadlineExceeded {
				t.Errorf("Turn error = %v, want a context status", err)
			}
			last := stream.events[len(stream.events)-1].GetTerminal()
			if last.GetState() != sessionspb.TurnState_TURN_STATE_CANCELLED || last.GetError() != tt.wantText || last.GetAnswer() != "" {
				t.Errorf("terminal = %v %q %q, want cancelled %q", last.GetState(), last.GetError(), last.GetAnswer(), tt.wantText)
			}
		})
	}
}

func TestReplay(t *testing.T) {
	const instructions, input, answer = "Reply briefly.", "hi", "recorded answer"
	sum, size, err := RequestDigest(route.ChatRequest("m1", instructions, input))
	if err != nil {
		t.Fatal(err)
	}
	recReq, _ := journal.Encode(journal.ModelRequest{Turn: 1, Model: "m1", SHA256: sum, Bytes: size})
	recComp, _ := journal.Encode(journal.ModelCompletion{Turn: 1, Model: "m1", Text: answer, FinishReason: "stop"})

	tests := []struct {
		name      string
		model     string
		input     string
		recReq    []byte
		recComp   []byte
		wantState sessionspb.TurnState
		wantText  string
		wantError string
		wantLive  int32
	}{
		{name: "matching digest answers from the recording", model: "m1", input: input, recReq: recReq, recComp: recComp,
			wantState: sessionspb.TurnState_TURN_STATE_COMPLETED, wantText: answer},
		{name: "changed input is a refused live call", model: "m1", input: "hi!", recReq: recReq, recComp: recComp,
			wantState: sessionspb.TurnState_TURN_STATE_FAILED, wantError: "model call failed: " + ErrTextReplayRefusal, wantLive: 1},
		{name: "changed model is a refused live call", model: "m2", input: input, recReq: recReq, recComp: recComp,
			wantState: sessionspb.TurnState_TURN_STATE_FAILED, wantError: "model call failed: " + ErrTextReplayRefusal, wantLive: 1},
		{name: "malformed recorded request", model: "m1", input: input, recReq: []byte(`{"turn":1,"extra":true}`), recComp: recComp,
			wantState: sessionspb.TurnState_TURN_STATE_FAILED, wantError: ErrTextRecordingBad},
		{name: "malformed recorded completion", model: "m1", input: input, recReq: recReq, recComp: []byte(`not json`),
			wantState: sessionspb.TurnState_TURN_STATE_FAILED, wantError: ErrTextRecordingBad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, func(string, route.Identity) (route.Model, error) {
				t.Error("replay called the resolver")
				return nil, errors.New("resolver must not be called on replay")
			})
			req := &sessionspb.HarnessTurnRequest{
				SessionId: "s1", Harness: Chat, Turn: 1,
				Model:        &sessionspb.ModelIdentity{Route: "test", Model: tt.model},
				Instructions: instructions, Input: tt.input,
				Replay: &sessionspb.RecordedExchange{RequestJson: tt.recReq, CompletionJson: tt.recComp},
			}
			events, err := collect(context.Background(), t, c, req)
			if err != nil {
				t.Fatalf("replay turn: %v", err)
			}
			term := events[len(events)-1].GetTerminal()
			if term.GetState() != tt.wantState || term.GetAnswer() != tt.wantText || term.GetError() != tt.wantError || term.GetLiveCalls() != tt.wantLive {
				t.Errorf("terminal = %v %q %q live=%d, want %v %q %q live=%d", term.GetState(), term.GetAnswer(), term.GetError(),
					term.GetLiveCalls(), tt.wantState, tt.wantText, tt.wantError, tt.wantLive)
			}
		})
	}
}

func TestReplayModelAnswersOnce(t *testing.T) {
	req := route.ChatRequest("m1", "i", "x")
	sum, size, _ := RequestDigest(req)
	recReq, _ := journal.Encode(journal.ModelRequest{Turn: 1, Model: "m1", SHA256: sum, Bytes: size})
	recComp, _ := journal.Encode(journal.ModelCompletion{Turn: 1, Model: "m1", Text: "a", FinishReason: "stop"})
	m, err := newReplayModel("m1", &sessionspb.RecordedExchange{RequestJson: recReq, CompletionJson: recComp})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Identity().Route; got != route.Replay {
		t.Errorf("replay identity route = %q", got)
	}
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if _, err := m.Complete(context.Background(), req); !errors.Is(err, errReplayRefused) {
		t.Errorf("second call error = %v, want refusal", err)
	}
	if got := m.liveCalls(); got != 1 {
		t.Errorf("live calls = %d, want 1", got)
	}
}

func TestRefusedRequests(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(*sessionspb.HarnessTurnRequest)
		wantCode codes.Code
		wantText string
	}{
		{name: "tools harness with no tools", mutate: func(r *sessionspb.HarnessTurnRequest) { r.Harness = LocalTools },
			wantCode: codes.InvalidArgument, wantText: "offers 1 to 128 tools"},
		{name: "chat harness offered tools", mutate: func(r *sessionspb.HarnessTurnRequest) {
			r.Tools = []*sessionspb.ToolSpec{{Name: "t", State: "Enabled", Source: "unavailable"}}
		}, wantCode: codes.InvalidArgument, wantText: "tool-free"},
		{name: "tool call on the judge path", mutate: func(r *sessionspb.HarnessTurnRequest) {
			r.Harness, r.Purpose = LocalTools, PurposeJudge
			r.Tools = []*sessionspb.ToolSpec{{Name: "t", State: "Enabled", Source: "unavailable"}}
		}, wantCode: codes.InvalidArgument, wantText: "judge session is tool-free"},
		{name: "unknown harness", mutate: func(r *sessionspb.HarnessTurnRequest) { r.Harness = "other" },
			wantCode: codes.InvalidArgument, wantText: `harness "other" is not served here`},
		{name: "no model", mutate: func(r *sessionspb.HarnessTurnRequest) { r.Model = nil },
			wantCode: codes.InvalidArgument, wantText: "no model identity"},
		{name: "no turn", mutate: func(r *sessionspb.HarnessTurnRequest) { r.Turn = 0 },
			wantCode: codes.InvalidArgument, wantText: "turns count from 1"},
		{name: "unknown purpose", mutate: func(r *sessionspb.HarnessTurnRequest) { r.Purpose = "other" },
			wantCode: codes.InvalidArgument, wantText: `purpose "other" is not known`},
	}
	m := &stubModel{text: "x"}
	c := dial(t, func(string, route.Identity) (route.Model, error) { return m, nil })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := chatRequest(PurposeAgent, "x")
			tt.mutate(req)
			_, err := collect(context.Background(), t, c, req)
			if status.Code(err) != tt.wantCode || !strings.Contains(status.Convert(err).Message(), tt.wantText) {
				t.Errorf("error = %v, want %v containing %q", err, tt.wantCode, tt.wantText)
			}
		})
	}
	if m.calls.Load() != 0 {
		t.Errorf("a refused request reached the model %d times", m.calls.Load())
	}
}

// uncommittedStream starts a turn and then, where the harness waits for
// "committed", gives next instead: the record was not journaled.
type uncommittedStream struct {
	recordingStream
	next func() (*sessionspb.HarnessInput, error)
}

func (s *uncommittedStream) Recv() (*sessionspb.HarnessInput, error) {
	if !s.sent || s.ended() {
		return s.recordingStream.Recv()
	}
	return s.next()
}

// A live turn sends its model request only after the caller says the
// request's record is committed: when the caller goes away instead (a
// journal failure, a kill), or answers anything else, nothing is sent.
func TestLiveTurnSendsNothingBeforeTheRequestIsCommitted(t *testing.T) {
	for name, next := range map[string]func() (*sessionspb.HarnessInput, error){
		"caller gone": func() (*sessionspb.HarnessInput, error) { return nil, io.EOF },
		"not committed": func() (*sessionspb.HarnessInput, error) {
			return &sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Start{Start: chatRequest(PurposeAgent, "again")}}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := &stubModel{text: "never"}
			s := New(func(string, route.Identity) (route.Model, error) { return m, nil })
			stream := &uncommittedStream{recordingStream: recordingStream{ctx: context.Background(), start: chatRequest(PurposeAgent, "x")}, next: next}
			if err := s.Turn(stream); err == nil {
				t.Error("Turn returned no error for a request that was never committed")
			}
			if n := m.calls.Load(); n != 0 {
				t.Fatalf("the model was called %d times before its request was committed", n)
			}
			if len(stream.events) != 1 || stream.events[0].GetModelRequest() == nil {
				t.Fatalf("events = %v, want only the model request", stream.events)
			}
		})
	}
}

// A replay waits for nothing: its caller sends only the turn request.
func TestReplayWaitsForNoCommit(t *testing.T) {
	m := &stubModel{text: "never"}
	s := New(func(string, route.Identity) (route.Model, error) { return m, nil })
	live := &recordingStream{ctx: context.Background(), start: chatRequest(PurposeAgent, "x")}
	m.text = "Release notes: x"
	if err := s.Turn(live); err != nil {
		t.Fatalf("live turn: %v", err)
	}
	req := chatRequest(PurposeAgent, "x")
	req.Replay = &sessionspb.RecordedExchange{RequestJson: live.events[0].GetModelRequest().GetRequestJson(), CompletionJson: live.events[1].GetModelCompletion().GetCompletionJson()}
	replay := &uncommittedStream{recordingStream: recordingStream{ctx: context.Background(), start: req}, next: func() (*sessionspb.HarnessInput, error) {
		t.Error("a replay waited for the caller")
		return nil, io.EOF
	}}
	if err := s.Turn(replay); err != nil {
		t.Fatalf("replay: %v", err)
	}
	last := replay.events[len(replay.events)-1].GetTerminal()
	if last.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED || last.GetLiveCalls() != 0 || m.calls.Load() != 1 {
		t.Fatalf("replay terminal = %v, model calls %d; want completed with no live call", last, m.calls.Load())
	}
}
