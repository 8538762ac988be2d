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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/sessions/sessionspb"
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
	harness sessionspb.HarnessClient

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
	turns   int
	running bool
}

func newService(j *journal.Journal, h sessionspb.HarnessClient) *service {
	return &service{journal: j, harness: h, sessions: make(map[string]*session)}
}

func (s *service) CreateSession(ctx context.Context, req *sessionspb.CreateSessionRequest) (*sessionspb.CreateSessionResponse, error) {
	switch req.GetPurpose() {
	case harness.PurposeAgent, harness.PurposeJudge:
	default:
		return nil, status.Errorf(codes.InvalidArgument, "create session: purpose %q is not known: use %q or %q",
			req.GetPurpose(), harness.PurposeAgent, harness.PurposeJudge)
	}
	model := journal.ModelIdentity{Route: req.GetModel().GetRoute(), Model: req.GetModel().GetModel()}
	if model.Route == "" || model.Model == "" {
		return nil, status.Error(codes.InvalidArgument, "create session: no model identity: set model.route and model.model")
	}
	names := make([]string, 0, len(req.GetTools()))
	for _, t := range req.GetTools() {
		names = append(names, t.GetName())
	}
	if len(names) > 0 && req.GetPurpose() == harness.PurposeJudge {
		return nil, status.Error(codes.InvalidArgument, "create session: a judge session is tool-free: judges see only the final answer; create it without tools")
	}
	h, err := Place(names)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	id, err := s.newID()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	sess := &session{id: id, harness: h, purpose: req.GetPurpose(), model: model, tools: req.GetTools()}
	payload, err := journal.Encode(journal.SessionPlaced{
		SessionID: id, Harness: h, Purpose: sess.purpose, ExampleID: req.GetExampleId(), Model: model,
		Tools: offeredFromProto(req.GetTools()),
	})
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := s.append(ctx, id, 0, journal.KindSessionPlaced, payload); err != nil {
		return nil, journalStatus(ctx, err)
	}
	s.mu.Lock()
	s.sessions[id] = sess
	s.mu.Unlock()
	return &sessionspb.CreateSessionResponse{SessionId: id, Harness: h}, nil
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

	payload, err := journal.Encode(journal.TurnStarted{
		Turn: turn, Instructions: req.GetInstructions(), Input: req.GetInput(), Model: sess.model,
	})
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := s.append(ctx, sess.id, turn, journal.KindTurnStarted, payload); err != nil {
		return nil, journalStatus(ctx, err)
	}
	started = true

	// From here on every path ends in exactly one turn.terminal record.
	// hctx lets a journal failure stop the model call in flight.
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	term, tr, held, runErr := s.streamTurn(hctx, sess, turn, req)
	if runErr != nil {
		cancel()
	}
	if err := s.writeTerminal(ctx, sess.id, term, held); err != nil {
		return nil, journalStatus(ctx, err)
	}
	if runErr != nil {
		return nil, runErr
	}
	return &sessionspb.RunTurnResponse{
		Turn: int32(turn), State: stateProto(term.State), Answer: term.Answer, Error: term.Error,
		ReportedModel: term.reportedModel, ToolUses: tr.uses(),
	}, nil
}

// terminal is the turn.terminal record to write, plus the reply's reported
// model for the response.
type terminal struct {
	journal.TurnTerminal
	reportedModel string
}

// streamTurn runs the turn on the harness and journals each record (model
// requests and completions, tool calls and results) as it arrives, each
// checked against the turn protocol when it arrives and committed before the
// next record is committed. A model completion is held until the next event:
// when the turn ends there (a terminal, or a broken stream), held is its
// payload and the caller commits it with the turn.terminal record in one
// transaction, saving a commit per turn; before any other record it is
// committed on its own. It returns the terminal to journal and the trace; a
// non-nil error is a journal failure the caller must report after writing
// that terminal.
func (s *service) streamTurn(ctx context.Context, sess *session, turn int, req *sessionspb.RunTurnRequest) (term terminal, tr *trace, held []byte, err error) {
	tr = newTrace(sess.harness, turn, sess.model.Model)
	// flush commits a held completion before anything else is journaled.
	flush := func() error {
		if held == nil {
			return nil
		}
		p := held
		held = nil
		return s.appendDetached(ctx, sess.id, turn, journal.KindModelCompletion, p)
	}
	// failed describes a turn the harness did not end itself. When the
	// caller's context has ended, that is the reason, whatever broke first.
	failed := func(text string) terminal {
		if ctx.Err() != nil {
			return cancelledTerminal(ctx, turn)
		}
		return terminal{TurnTerminal: journal.TurnTerminal{Turn: turn, State: journal.StateFailed, Error: text}}
	}
	stream, err := s.harness.Turn(ctx, &sessionspb.HarnessTurnRequest{
		SessionId: sess.id, Harness: sess.harness, Purpose: sess.purpose, Turn: int32(turn),
		Model:        &sessionspb.ModelIdentity{Route: sess.model.Route, Model: sess.model.Model},
		Instructions: req.GetInstructions(), Input: req.GetInput(), History: req.GetHistory(), Tools: sess.tools,
	})
	if err != nil {
		return failed(errTextHarnessUnavailable), tr, nil, nil
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return failed(errTextHarnessEnded), tr, held, nil
		}
		if err != nil {
			return failed(harnessErrorText(err)), tr, held, nil
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
		case *sessionspb.HarnessEvent_Terminal:
			return checkTerminal(e.Terminal, turn, tr), tr, held, nil
		default:
			return failed(errTextHarnessProtocol), tr, held, nil
		}
		if !tr.accept(kind, payload) {
			return failed(errTextHarnessProtocol), tr, held, nil
		}
		if err := flush(); err != nil {
			return failed(errTextJournalWrite), tr, nil, journalStatus(ctx, err)
		}
		if kind == journal.KindModelCompletion {
			held = payload
			continue
		}
		if err := s.appendDetached(ctx, sess.id, turn, kind, payload); err != nil {
			return failed(errTextJournalWrite), tr, nil, journalStatus(ctx, err)
		}
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

func cancelledTerminal(ctx context.Context, turn int) terminal {
	text := harness.ErrTextCancelled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		text = harness.ErrTextDeadline
	}
	return terminal{TurnTerminal: journal.TurnTerminal{Turn: turn, State: journal.StateCancelled, Error: text}}
}

// writeTerminal commits the turn.terminal record even when ctx is already
// cancelled: a cancelled turn must still say so in the journal. A held
// model completion (see streamTurn) is committed with it, before it, in the
// same transaction.
func (s *service) writeTerminal(ctx context.Context, sessionID string, t terminal, held []byte) error {
	payload, err := journal.Encode(t.TurnTerminal)
	if err != nil {
		return err
	}
	if held == nil {
		return s.appendDetached(ctx, sessionID, t.Turn, journal.KindTurnTerminal, payload)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), detachedWriteTimeout)
	defer cancel()
	_, err = s.journal.AppendAll(wctx, []journal.Record{
		{SessionID: sessionID, Turn: t.Turn, Kind: journal.KindModelCompletion, Version: journal.SchemaVersion, Payload: held},
		{SessionID: sessionID, Turn: t.Turn, Kind: journal.KindTurnTerminal, Version: journal.SchemaVersion, Payload: payload},
	})
	return err
}

// appendDetached commits a record of something that already happened (a
// request the harness sent, a reply it got, how the turn ended), so the
// caller's cancellation must not lose it. The write is bounded instead.
func (s *service) appendDetached(ctx context.Context, sessionID string, turn int, kind journal.Kind, payload []byte) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), detachedWriteTimeout)
	defer cancel()
	return s.append(wctx, sessionID, turn, kind, payload)
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
