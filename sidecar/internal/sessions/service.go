package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// detachedWriteTimeout bounds a record written after the caller may have
// gone away: long enough for a SQLite commit, short enough that a cancelled
// run still ends promptly.
const detachedWriteTimeout = 5 * time.Second

// Fixed texts for terminal records Sessions writes itself.
const (
	errTextHarnessUnavailable = "harness unavailable"
	errTextHarnessProtocol    = "harness broke the turn protocol"
	errTextHarnessEnded       = "harness ended the turn without a terminal event"
	errTextJournalWrite       = "journal write failed"
)

// service implements sessionspb.SessionsServer over one run's journal.
type service struct {
	sessionspb.UnimplementedSessionsServer
	journal *journal.Journal
	// streams are the harness Turn streams, kept open between turns.
	streams *streamPool[harnessStream]

	mu       sync.Mutex
	sessions map[string]*session
	created  uint64
}

// session is what the service remembers about an open session. Verification
// never reads it: it trusts only the journal.
type session struct {
	id      string
	harness string
	purpose string
	model   journal.ModelIdentity
	tools   []*sessionspb.ToolSpec
	// workspace is the example's fixture workspace (kmx-workspace-tools-v1).
	workspace *sessionspb.WorkspaceRef
	turns     int
	running   bool
}

func newService(j *journal.Journal, h sessionspb.HarnessClient) *service {
	return &service{journal: j, streams: newStreamPool(func(ctx context.Context) (harnessStream, error) { return h.Turn(ctx) }), sessions: make(map[string]*session)}
}

// close cancels the harness streams kept between turns. Call it once no
// handler runs any more (the server has stopped).
func (s *service) close() { s.streams.close() }

func (s *service) CreateSession(ctx context.Context, req *sessionspb.CreateSessionRequest) (*sessionspb.CreateSessionResponse, error) {
	sess, placed, err := s.place(req)
	if err != nil {
		return nil, err
	}
	if _, err := s.journal.Append(ctx, placed); err != nil {
		return nil, journalStatus(ctx, err)
	}
	s.mu.Lock()
	s.sessions[sess.id] = sess
	s.mu.Unlock()
	return &sessionspb.CreateSessionResponse{SessionId: sess.id, Harness: sess.harness}, nil
}

// place checks a session request, picks its harness and ID, and returns the
// session with its session.placed record, not yet journaled.
func (s *service) place(req *sessionspb.CreateSessionRequest) (*session, journal.Record, error) {
	switch req.GetPurpose() {
	case harness.PurposeAgent, harness.PurposeJudge:
	default:
		return nil, journal.Record{}, status.Errorf(codes.InvalidArgument, "create session: purpose %q is not known: use %q or %q",
			req.GetPurpose(), harness.PurposeAgent, harness.PurposeJudge)
	}
	model := journal.ModelIdentity{Route: req.GetModel().GetRoute(), Model: req.GetModel().GetModel()}
	if model.Route == "" || model.Model == "" {
		return nil, journal.Record{}, status.Error(codes.InvalidArgument, "create session: no model identity: set model.route and model.model")
	}
	names := make([]string, 0, len(req.GetTools()))
	for _, t := range req.GetTools() {
		names = append(names, t.GetName())
	}
	if len(names) > 0 && req.GetPurpose() == harness.PurposeJudge {
		return nil, journal.Record{}, status.Error(codes.InvalidArgument, "create session: a judge session is tool-free: judges see only the final answer; create it without tools")
	}
	h, err := Place(names)
	if err != nil {
		return nil, journal.Record{}, status.Error(codes.InvalidArgument, err.Error())
	}
	var placedWS *journal.PlacedWorkspace
	if ws := req.GetWorkspace(); ws != nil {
		if h != harness.LocalTools || ws.GetFixture() == "" || ws.GetHash() == "" {
			return nil, journal.Record{}, status.Error(codes.InvalidArgument,
				"create session: a workspace needs declared tools, its fixture and its hash: declare the tools the example works with")
		}
		h = harness.WorkspaceTools
		placedWS = &journal.PlacedWorkspace{Fixture: ws.GetFixture(), Hash: ws.GetHash()}
	}
	id, err := s.newID()
	if err != nil {
		return nil, journal.Record{}, status.Error(codes.Internal, err.Error())
	}
	sess := &session{id: id, harness: h, purpose: req.GetPurpose(), model: model, tools: req.GetTools(), workspace: req.GetWorkspace()}
	payload, err := journal.Encode(journal.SessionPlaced{
		SessionID: id, Harness: h, Purpose: sess.purpose, ExampleID: req.GetExampleId(), Model: model,
		Tools: harness.ToolsFromProto(req.GetTools()), Workspace: placedWS,
	})
	if err != nil {
		return nil, journal.Record{}, status.Error(codes.Internal, err.Error())
	}
	return sess, record(id, 0, journal.KindSessionPlaced, payload), nil
}

// newID returns a session ID unique within the run: a counter keeps IDs
// sortable by creation, a random suffix keeps them from colliding with
// sessions of another process writing the same journal.
func (s *service) newID() (string, error) {
	var suffix [4]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", fmt.Errorf("new session id: %w", err)
	}
	s.mu.Lock()
	s.created++
	n := s.created
	s.mu.Unlock()
	return fmt.Sprintf("s%08d-%s", n, hex.EncodeToString(suffix[:])), nil
}

// beginTurn claims the session for one turn and returns its number.
func (s *service) beginTurn(id string) (*session, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return nil, 0, status.Errorf(codes.NotFound, "run turn: session %q is not open here: create it with CreateSession first", id)
	}
	if sess.running {
		return nil, 0, status.Errorf(codes.FailedPrecondition, "run turn: session %q is already running a turn: wait for it to end", id)
	}
	sess.running = true
	return sess, sess.turns + 1, nil
}

// endTurn releases the session; started says whether the turn number was
// used (its turn.started record was committed).
func (s *service) endTurn(sess *session, started bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.running = false
	if started {
		sess.turns++
	}
}

func (s *service) RunTurn(ctx context.Context, req *sessionspb.RunTurnRequest) (*sessionspb.RunTurnResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	sess, turn, err := s.beginTurn(req.GetSessionId())
	if err != nil {
		return nil, err
	}
	started := false
	defer func() { s.endTurn(sess, started) }()
	rec, err := startedRecord(sess, turn, req, false)
	if err != nil {
		return nil, err
	}
	res, _, started, err := s.runTurn(ctx, sess, turn, req, []journal.Record{rec}, nil, false)
	return res, err
}

// Execute serves sessions of one turn, one request after another on the
// stream (see the contract), until the client ends the stream or an error
// does.
func (s *service) Execute(stream grpc.BidiStreamingServer[sessionspb.ExecuteRequest, sessionspb.ExecuteEvent]) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.executeOne(stream, req); err != nil {
			return err
		}
	}
}

// executeOne places a session, runs its one turn and verifies it, within
// the request's deadline. Its session is never registered for more turns.
func (s *service) executeOne(stream grpc.BidiStreamingServer[sessionspb.ExecuteRequest, sessionspb.ExecuteEvent], req *sessionspb.ExecuteRequest) error {
	ctx := stream.Context()
	if d := req.GetDeadlineUnixNano(); d != 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Unix(0, d))
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	sess, placed, err := s.place(req.GetSession())
	if err != nil {
		return err
	}
	const turn = 1
	run := &sessionspb.RunTurnRequest{SessionId: sess.id, Instructions: req.GetInstructions(), Input: req.GetInput(), History: req.GetHistory()}
	// An example's turn journals its history: it replays on its own.
	started, err := startedRecord(sess, turn, run, true)
	if err != nil {
		return err
	}
	// The turn's stream stays open for its replay (then_replay): one
	// harness stream per example instead of two.
	res, ts, _, err := s.runTurn(ctx, sess, turn, run, []journal.Record{placed, started}, func() {
		// The client learns the session once it is journaled; if it has
		// gone away, the turn's context ends the turn.
		_ = stream.Send(&sessionspb.ExecuteEvent{Event: &sessionspb.ExecuteEvent_Placed{
			Placed: &sessionspb.CreateSessionResponse{SessionId: sess.id, Harness: sess.harness},
		}})
	}, true)
	defer ts.close()
	if err != nil {
		return err
	}
	if err := stream.Send(&sessionspb.ExecuteEvent{Event: &sessionspb.ExecuteEvent_Turn{Turn: res}}); err != nil {
		return err
	}
	if res.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
		return nil
	}
	v, err := s.verifyTurn(ctx, sess.id, turn, req.GetHistory(), ts)
	if err != nil {
		return err
	}
	return stream.Send(&sessionspb.ExecuteEvent{Event: &sessionspb.ExecuteEvent_Verified{Verified: v}})
}

// startedRecord is the turn.started record of a turn, not yet journaled.
// withHistory journals the request's history in it (an example's turn); a
// conversation's turn leaves it out, its history being its earlier turns.
func startedRecord(sess *session, turn int, req *sessionspb.RunTurnRequest, withHistory bool) (journal.Record, error) {
	ts := journal.TurnStarted{Turn: turn, Instructions: req.GetInstructions(), Input: req.GetInput(), Model: sess.model}
	if withHistory {
		ts.History = harness.HistoryFromProto(req.GetHistory())
	}
	payload, err := journal.Encode(ts)
	if err != nil {
		return journal.Record{}, status.Error(codes.Internal, err.Error())
	}
	return record(sess.id, turn, journal.KindTurnStarted, payload), nil
}

// runTurn runs one turn of sess on its harness and journals it. begin are
// the records the turn starts with (its turn.started, after the session's
// placement when the session is new): they are committed with the first
// record that must be durable, so a chat turn is two commits (see
// turnWriter). started reports whether the turn reached the journal; when
// it did not, nothing of it was written and nothing was sent. journaled, if
// not nil, is called once it did. With keep, a turn that completed returns
// its harness stream, still open for the turn's replay (the caller closes
// it); otherwise ts is nil and the stream is released.
func (s *service) runTurn(ctx context.Context, sess *session, turn int, req *sessionspb.RunTurnRequest,
	begin []journal.Record, journaled func(), keep bool) (res *sessionspb.RunTurnResponse, ts *turnStream, started bool, err error) {
	w := &turnWriter{journal: s.journal, sessionID: sess.id, ctx: ctx, held: begin, journaled: journaled}
	// From the first commit on every path ends in exactly one
	// turn.terminal record. hctx lets a journal failure stop the model call
	// in flight.
	hctx, cancel := context.WithCancel(ctx)
	defer func() {
		if ts == nil {
			cancel()
		}
	}()
	begun := time.Now()
	term, tr, open, runErr := s.streamTurn(hctx, sess, turn, req, w, keep)
	term.DurationUs = max(int(time.Since(begun).Microseconds()), 1)
	// Runs before cancel above: a stream marked reusable goes back to the
	// pool before hctx ends.
	defer func() {
		if ts == nil {
			open.close()
		}
	}()
	if runErr != nil {
		cancel()
		if !w.started {
			return nil, nil, false, runErr
		}
	}
	if err := w.finish(term.TurnTerminal); err != nil {
		return nil, nil, w.started, journalStatus(ctx, err)
	}
	if runErr != nil {
		return nil, nil, true, runErr
	}
	if term.State == journal.StateCompleted && open != nil {
		if keep {
			open.release = cancel
			ts = open
		} else {
			// The turn ended cleanly and is journaled: its stream may
			// carry the next turn.
			open.reusable = true
		}
	}
	return &sessionspb.RunTurnResponse{
		Turn: int32(turn), State: stateProto(term.State), Answer: term.Answer, Error: term.Error,
		ReportedModel: term.reportedModel, ToolUses: tr.uses(),
	}, ts, true, nil
}

// harnessStream is the client side of a harness Turn stream.
type harnessStream = grpc.BidiStreamingClient[sessionspb.HarnessInput, sessionspb.HarnessEvent]

// turnStream is one turn's use of a harness Turn stream. A then_replay
// live turn's stream is kept open after its terminal and carries the turn's
// replay (replayStream).
type turnStream struct {
	pool *streamPool[harnessStream]
	ps   *pooled[harnessStream]
	// stop detaches the stream from the turn's context (context.AfterFunc,
	// which cancels the stream when that context ends first).
	stop func() bool
	// reusable is set once the stream's unit of work has ended cleanly:
	// its last terminal received, completed, with nothing out of protocol
	// and nothing journaled left to fail.
	reusable bool
	// release, when set, ends the context the turn ran in (runTurn's).
	release context.CancelFunc
}

// close ends the turn's use of the stream. A reusable stream whose turn
// context has not ended goes back to the pool; every other stream is
// cancelled, so the harness's handler returns (and stops any model call in
// flight). A nil turnStream does nothing.
func (t *turnStream) close() {
	if t == nil {
		return
	}
	if detached := t.stop(); t.reusable && detached {
		t.pool.put(t.ps)
	} else {
		t.ps.cancel()
	}
	if t.release != nil {
		t.release()
	}
}

// terminal is the turn.terminal record to write, plus the reply's reported
// model for the response.
type terminal struct {
	journal.TurnTerminal
	reportedModel string
}

// streamTurn runs the turn on the harness and hands each record it streams
// (model requests and completions, tool calls and results) to w, each
// checked against the turn protocol when it arrives. A model request or a
// tool call is committed, with everything held before it, before the
// harness is told "committed", and the harness sends the request or makes
// the call only then. It returns the terminal to journal and the trace; a
// non-nil error is a journal failure the caller must report (after writing
// that terminal, if the turn reached the journal). open is the stream it
// ran on (nil if none opened; the caller closes it); with thenReplay the
// harness keeps it open after the terminal for the turn's replay.
func (s *service) streamTurn(ctx context.Context, sess *session, turn int, req *sessionspb.RunTurnRequest, w *turnWriter,
	thenReplay bool) (term terminal, tr *trace, open *turnStream, err error) {
	tr = newTrace(sess.harness, turn, sess.model.Model)
	// failed describes a turn the harness did not end itself. When the
	// caller's context has ended, that is the reason, whatever broke first.
	failed := func(text string) terminal {
		if err := ended(ctx); err != nil {
			return cancelledTerminal(err, turn)
		}
		return terminal{TurnTerminal: journal.TurnTerminal{Turn: turn, State: journal.StateFailed, Error: text}}
	}
	// The turn crosses the second in-memory gRPC listener here, Sessions to
	// the harness (docs/architecture.md), which calls the route.
	open, err = s.openTurn(ctx, &sessionspb.HarnessTurnRequest{
		SessionId: sess.id, Harness: sess.harness, Purpose: sess.purpose, Turn: int32(turn),
		Model:        &sessionspb.ModelIdentity{Route: sess.model.Route, Model: sess.model.Model},
		Instructions: req.GetInstructions(), Input: req.GetInput(), History: req.GetHistory(), Tools: sess.tools,
		ThenReplay: thenReplay, Workspace: sess.workspace,
	})
	if err != nil {
		return failed(errTextHarnessUnavailable), tr, nil, nil
	}
	stream := open.ps.stream
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return failed(errTextHarnessEnded), tr, open, nil
		}
		if err != nil {
			return failed(harnessErrorText(err)), tr, open, nil
		}
		var kind journal.Kind
		var payload []byte
		switch e := ev.GetEvent().(type) {
		case *sessionspb.HarnessEvent_ModelRequest:
			kind, payload = journal.KindModelRequest, e.ModelRequest.GetRequestJson()
		case *sessionspb.HarnessEvent_ModelCompletion:
			kind, payload = journal.KindModelCompletion, e.ModelCompletion.GetCompletionJson()
		case *sessionspb.HarnessEvent_ToolCall:
			kind, payload = journal.KindToolCall, e.ToolCall.GetCallJson()
		case *sessionspb.HarnessEvent_ToolResult:
			kind, payload = journal.KindToolResult, e.ToolResult.GetResultJson()
		case *sessionspb.HarnessEvent_WorkspaceOutcome:
			kind, payload = journal.KindWorkspaceOutcome, e.WorkspaceOutcome.GetOutcomeJson()
		case *sessionspb.HarnessEvent_Terminal:
			return checkTerminal(e.Terminal, turn, tr), tr, open, nil
		default:
			return failed(errTextHarnessProtocol), tr, open, nil
		}
		if !tr.accept(kind, payload) {
			return failed(errTextHarnessProtocol), tr, open, nil
		}
		w.add(record(sess.id, turn, kind, payload))
		if kind != journal.KindModelRequest && kind != journal.KindToolCall {
			continue
		}
		if err := w.commit(); err != nil {
			return failed(errTextJournalWrite), tr, open, journalStatus(ctx, err)
		}
		// The harness waits for this before it acts. If the stream is
		// gone, the next Recv says so.
		_ = stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Committed{Committed: &sessionspb.Committed{}}})
	}
}

// deadlineGrace is how long a turn whose deadline has passed waits for the
// harness, which holds the same deadline, to end the turn itself before
// its stream is cut.
const deadlineGrace = time.Second

// openTurn sends the turn request on a harness stream: an idle one kept
// from an earlier turn, or a new one. The request carries ctx's deadline
// (the harness bounds the turn by it), and ctx ending cancels the stream,
// as it would a stream opened with ctx. The caller closes the turnStream.
//
// At the deadline itself the stream is cut only after deadlineGrace: the
// harness's copy of the deadline stops the model call and sends the
// cancelled terminal, so the turn's outcome is reported once its model
// call has stopped, not while the cut is still on its way. A cancellation
// cuts the stream at once.
func (s *service) openTurn(ctx context.Context, req *sessionspb.HarnessTurnRequest) (*turnStream, error) {
	withDeadline(ctx, req)
	ps, err := s.streams.get()
	if err != nil {
		return nil, err
	}
	hasDeadline := req.GetDeadlineUnixNano() != 0
	cut := func() {
		if hasDeadline && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			time.AfterFunc(deadlineGrace, ps.cancel)
			return
		}
		ps.cancel()
	}
	ts := &turnStream{pool: s.streams, ps: ps, stop: context.AfterFunc(ctx, cut)}
	if err := ps.stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Start{Start: req}}); err != nil {
		ts.close()
		return nil, err
	}
	return ts, nil
}

// withDeadline sets req's deadline to ctx's (none: 0).
func withDeadline(ctx context.Context, req *sessionspb.HarnessTurnRequest) {
	req.DeadlineUnixNano = 0
	if d, ok := ctx.Deadline(); ok {
		req.DeadlineUnixNano = d.UnixNano()
	}
}

// checkTerminal turns the harness's terminal event into the record to write.
// A completed turn must be a complete trace and carry its final completion's
// text as its answer; anything else is a protocol failure, never a
// completed turn.
func checkTerminal(ev *sessionspb.TerminalEvent, turn int, tr *trace) terminal {
	t := terminal{TurnTerminal: journal.TurnTerminal{Turn: turn}}
	switch ev.GetState() {
	case sessionspb.TurnState_TURN_STATE_COMPLETED:
		completion := tr.final()
		if completion == nil || ev.GetAnswer() != completion.Text {
			t.State, t.Error = journal.StateFailed, errTextHarnessProtocol
			return t
		}
		t.State, t.Answer, t.reportedModel = journal.StateCompleted, ev.GetAnswer(), completion.Model
	case sessionspb.TurnState_TURN_STATE_FAILED:
		t.State, t.Error = journal.StateFailed, ev.GetError()
	case sessionspb.TurnState_TURN_STATE_CANCELLED:
		t.State, t.Error = journal.StateCancelled, ev.GetError()
	default:
		t.State, t.Error = journal.StateFailed, errTextHarnessProtocol
	}
	if t.State != journal.StateCompleted && t.Error == "" {
		t.Error = errTextHarnessProtocol
	}
	return t
}

// ended is context.DeadlineExceeded once ctx's deadline has passed, and
// otherwise ctx.Err(). Two timers hold the same deadline instant besides
// ctx's own: the harness's (the turn request's deadline_unix_nano) and the
// runner's (the example's context, which cuts its Execute stream). Their
// callbacks run as goroutines in any order, so under load the harness can
// cut the turn while ctx still says nothing, or the runner's cut can cancel
// ctx before ctx's own timer fires: past the deadline either is the
// deadline, not an unavailable harness or a plain cancellation.
func ended(ctx context.Context) error {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return ctx.Err()
}

func cancelledTerminal(err error, turn int) terminal {
	text := harness.ErrTextCancelled
	if errors.Is(err, context.DeadlineExceeded) {
		text = harness.ErrTextDeadline
	}
	return terminal{TurnTerminal: journal.TurnTerminal{Turn: turn, State: journal.StateCancelled, Error: text}}
}

// harnessErrorText keeps a harness refusal's own fixed text (it says what to
// change) and reduces any other stream failure to a class.
func harnessErrorText(err error) string {
	st, ok := status.FromError(err)
	if ok {
		switch st.Code() {
		case codes.InvalidArgument, codes.FailedPrecondition:
			return "harness refused the turn: " + st.Message()
		}
	}
	return errTextHarnessUnavailable
}

func stateProto(state string) sessionspb.TurnState {
	switch state {
	case journal.StateCompleted:
		return sessionspb.TurnState_TURN_STATE_COMPLETED
	case journal.StateFailed:
		return sessionspb.TurnState_TURN_STATE_FAILED
	case journal.StateCancelled:
		return sessionspb.TurnState_TURN_STATE_CANCELLED
	}
	return sessionspb.TurnState_TURN_STATE_UNSPECIFIED
}

// journalStatus maps a journal error to a gRPC status: the caller's own
// cancellation stays a context status, anything else is Internal.
func journalStatus(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return status.Error(codes.Internal, err.Error())
}
