package sessions

import (
	"bytes"
	"context"
	"errors"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// Fixed reasons VerifyTurn gives. Each names the first check that failed;
// none echoes journal content.
const (
	ReasonTampered         = "journal tampered"
	ReasonUnreadable       = "journal unreadable"
	ReasonMissingPrefix    = "record missing: "
	ReasonDuplicatePrefix  = "record duplicated: "
	ReasonMalformedPrefix  = "record malformed: "
	ReasonVersionPrefix    = "record version unsupported: "
	ReasonUnknownKind      = "record kind unknown"
	ReasonOutOfOrder       = "records out of order"
	ReasonSessionMismatch  = "session identity differs"
	ReasonModelMismatch    = "model identity differs"
	ReasonTurnMismatch     = "turn numbers differ"
	ReasonNotCompleted     = "turn not completed"
	ReasonNotReplayable    = "harness cannot replay this turn"
	ReasonReplayLiveCall   = "replay attempted a live model call"
	ReasonReplayIncomplete = "replay did not complete"
	ReasonReplayRequest    = "replay request differs"
	ReasonReplayAnswer     = "replay answer differs"
)

// journaledTurn is one turn's five records, decoded and checked for shape.
type journaledTurn struct {
	placed     journal.SessionPlaced
	started    journal.TurnStarted
	request    journal.ModelRequest
	completion journal.ModelCompletion
	terminal   journal.TurnTerminal
	// requestJSON and completionJSON are the payloads exactly as journaled:
	// replay receives these bytes, not a re-encoding of them.
	requestJSON    []byte
	completionJSON []byte
}

func (s *service) VerifyTurn(ctx context.Context, req *sessionspb.VerifyTurnRequest) (*sessionspb.VerifyTurnResponse, error) {
	if req.GetSessionId() == "" || req.GetTurn() < 1 {
		return nil, status.Error(codes.InvalidArgument, "verify turn: give a session_id and a turn number from 1")
	}
	return s.verifyTurn(ctx, req.GetSessionId(), int(req.GetTurn()), req.GetHistory(), nil)
}

// verifyTurn reads the session's records back from the journal (one
// prepared query, never memory), checks the turn's records and replays it:
// on ts, the turn's own live stream kept open for it, when not nil (the
// caller closes it), else on a stream of its own.
func (s *service) verifyTurn(ctx context.Context, sessionID string, turn int, history []*sessionspb.ChatMessage, ts *turnStream) (*sessionspb.VerifyTurnResponse, error) {
	recs, err := s.readSession(ctx, sessionID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		if isTampered(err) {
			return refuse(ReasonTampered, 0), nil
		}
		return refuse(ReasonUnreadable, 0), nil
	}
	tools, placed := isToolSession(recs)
	if tools {
		tt, n, reason := collectToolTurn(recs, sessionID, turn)
		if reason != "" {
			return refuse(reason, n), nil
		}
		h, ok := turnHistory(tt.started, history)
		if !ok {
			return refuse(ReasonReplayRequest, n), nil
		}
		return measured(s.replayTools(ctx, tt, n, h, ts))(tt.terminal, tt.tr.completions)
	}
	jt, n, reason := collectTurn(recs, sessionID, turn, placed)
	if reason != "" {
		return refuse(reason, n), nil
	}
	h, ok := turnHistory(jt.started, history)
	if !ok {
		return refuse(ReasonReplayRequest, n), nil
	}
	return measured(s.replay(ctx, jt, n, h, ts))(jt.terminal, []journal.ModelCompletion{jt.completion})
}

// turnHistory is the history a turn is replayed with: the one its
// turn.started journaled (an example's turn), else the caller's (a
// conversation rebuilds it from its earlier turns). A caller's non-empty
// history that differs from a journaled one is no history of this turn.
func turnHistory(started journal.TurnStarted, passed []*sessionspb.ChatMessage) ([]*sessionspb.ChatMessage, bool) {
	if len(started.History) == 0 {
		return passed, true
	}
	if len(passed) != 0 {
		if len(passed) != len(started.History) {
			return nil, false
		}
		for i, m := range passed {
			if m.GetRole() != started.History[i].Role || m.GetContent() != started.History[i].Content {
				return nil, false
			}
		}
	}
	return harness.HistoryToProto(started.History), true
}

// measured adds a verified turn's journaled measures to its response: the
// terminal's duration and the usage summed over its completions (none when
// any send reported none).
func measured(resp *sessionspb.VerifyTurnResponse, err error) func(journal.TurnTerminal, []journal.ModelCompletion) (*sessionspb.VerifyTurnResponse, error) {
	return func(term journal.TurnTerminal, comps []journal.ModelCompletion) (*sessionspb.VerifyTurnResponse, error) {
		if err != nil || resp == nil || !resp.GetVerified() {
			return resp, err
		}
		resp.DurationUs = int64(term.DurationUs)
		var u sessionspb.TokenUsage
		for _, c := range comps {
			if c.Usage == nil {
				return resp, nil
			}
			u.PromptTokens += int64(c.Usage.PromptTokens)
			u.CompletionTokens += int64(c.Usage.CompletionTokens)
			u.TotalTokens += int64(c.Usage.TotalTokens)
		}
		if len(comps) > 0 {
			resp.Usage = &u
		}
		return resp, nil
	}
}

func refuse(reason string, records int) *sessionspb.VerifyTurnResponse {
	return &sessionspb.VerifyTurnResponse{Verified: false, Reason: reason, Records: int32(records)}
}

// collectTurn finds the session's placement and the requested turn's four
// records among a session's records (in journal order), decodes each
// strictly and checks that they belong together. It returns the number of
// the turn's records found and, when they do not form a complete turn, the
// reason. placed, when not nil, is recs[0] already decoded (isToolSession).
func collectTurn(recs []journal.Record, sessionID string, turn int, placed *journal.SessionPlaced) (journaledTurn, int, string) {
	var jt journaledTurn
	var found [len(journal.TurnKinds)]bool
	last := -1 // index in TurnKinds of the last record taken, for order
	n := 0
	for i, r := range recs {
		if r.Version != journal.SchemaVersion {
			return jt, n, ReasonVersionPrefix + string(r.Kind)
		}
		idx := kindIndex(r.Kind)
		if idx < 0 {
			return jt, n, ReasonUnknownKind
		}
		var recTurn int
		var err error
		switch r.Kind {
		case journal.KindSessionPlaced:
			if i != 0 || found[idx] {
				return jt, n, ReasonOutOfOrder
			}
			if placed != nil {
				jt.placed = *placed
			} else {
				err = journal.Decode(r.Payload, &jt.placed)
			}
			recTurn = turn // the placement belongs to every turn
			if r.Turn != 0 {
				return jt, n, ReasonTurnMismatch
			}
		case journal.KindTurnStarted:
			var v journal.TurnStarted
			err, recTurn = journal.Decode(r.Payload, &v), v.Turn
			if err == nil && v.Turn == turn {
				jt.started = v
			}
		case journal.KindModelRequest:
			var v journal.ModelRequest
			err, recTurn = journal.Decode(r.Payload, &v), v.Turn
			if err == nil && v.Turn == turn {
				jt.request, jt.requestJSON = v, r.Payload
			}
		case journal.KindModelCompletion:
			var v journal.ModelCompletion
			err, recTurn = journal.Decode(r.Payload, &v), v.Turn
			if err == nil && v.Turn == turn {
				jt.completion, jt.completionJSON = v, r.Payload
			}
		case journal.KindTurnTerminal:
			var v journal.TurnTerminal
			err, recTurn = journal.Decode(r.Payload, &v), v.Turn
			if err == nil && v.Turn == turn {
				jt.terminal = v
			}
		}
		if err != nil {
			return jt, n, ReasonMalformedPrefix + string(r.Kind)
		}
		if r.Kind != journal.KindSessionPlaced && r.Turn != recTurn {
			return jt, n, ReasonTurnMismatch
		}
		if recTurn != turn {
			continue
		}
		if found[idx] {
			return jt, n, ReasonDuplicatePrefix + string(r.Kind)
		}
		if idx < last {
			return jt, n, ReasonOutOfOrder
		}
		found[idx], last = true, idx
		n++
	}
	for i, k := range journal.TurnKinds {
		if !found[i] {
			return jt, n, ReasonMissingPrefix + string(k)
		}
	}
	return jt, n, checkTurn(jt, sessionID)
}

// checkTurn checks the decoded records agree with each other.
func checkTurn(jt journaledTurn, sessionID string) string {
	if jt.placed.SessionID != sessionID {
		return ReasonSessionMismatch
	}
	if jt.started.Model != jt.placed.Model || jt.request.Model != jt.placed.Model.Model {
		return ReasonModelMismatch
	}
	if jt.terminal.State != journal.StateCompleted {
		return ReasonNotCompleted
	}
	if jt.placed.Harness != harness.Chat {
		return ReasonNotReplayable
	}
	return ""
}

func kindIndex(k journal.Kind) int {
	for i, tk := range journal.TurnKinds {
		if tk == k {
			return i
		}
	}
	return -1
}

// replay runs the journaled turn through its harness with a model that
// answers only from the recorded completion, over the same gRPC contract a
// live turn uses, and compares what comes back with the journal.
//
// history is the conversation the turn was sent with (empty for an
// example): a conversation rebuilds it from the replays of its earlier
// turns, so a changed earlier turn makes this turn's request differ.
func (s *service) replay(ctx context.Context, jt journaledTurn, n int, history []*sessionspb.ChatMessage, ts *turnStream) (*sessionspb.VerifyTurnResponse, error) {
	replayed, resp, err := s.replayStream(ctx, &sessionspb.HarnessTurnRequest{
		SessionId: jt.placed.SessionID, Harness: jt.placed.Harness, Purpose: jt.placed.Purpose,
		Turn:         int32(jt.started.Turn),
		Model:        &sessionspb.ModelIdentity{Route: jt.placed.Model.Route, Model: jt.placed.Model.Model},
		Instructions: jt.started.Instructions, Input: jt.started.Input, History: history,
		Replay: &sessionspb.RecordedExchange{RequestJson: jt.requestJSON, CompletionJson: jt.completionJSON},
	}, n, ts)
	if err != nil || resp.Reason != "" {
		return resp, err
	}
	var replayedRequest []byte
	for _, m := range replayed {
		if m.kind == journal.KindModelRequest {
			replayedRequest = m.payload
		}
	}
	switch {
	case !bytes.Equal(replayedRequest, jt.requestJSON):
		resp.Reason = ReasonReplayRequest
	case resp.Answer != jt.terminal.Answer || resp.Answer != jt.completion.Text:
		resp.Reason = ReasonReplayAnswer
	default:
		resp.Verified = true
		return resp, nil
	}
	resp.Answer = ""
	return resp, nil
}

// replayStream runs one replay on the harness and collects what it streams:
// the records between turn.started and turn.terminal, in order, and a
// response carrying the replay's live-call count and answer. The response's
// Reason is set when the replay itself failed (a live call attempted, or no
// completed terminal); the caller compares the rest with the journal and
// sets Verified. The error is the caller's own cancellation.
//
// The replay runs on ts when it is not nil: the turn's live stream, which
// the harness keeps open after a then_replay turn's terminal and which now
// receives req (built from the records read back from the journal) as its
// replay input. Otherwise it takes a stream of its own (openTurn). Either
// way the harness runs the same replay, from req alone, bounded by ctx's
// deadline. A replay that completes with no live call and nothing out of
// protocol leaves its stream reusable; the caller closes ts, replayStream
// its own.
func (s *service) replayStream(ctx context.Context, req *sessionspb.HarnessTurnRequest, n int, ts *turnStream) ([]middleRecord, *sessionspb.VerifyTurnResponse, error) {
	if ts != nil {
		withDeadline(ctx, req)
		if err := ts.ps.stream.Send(&sessionspb.HarnessInput{Input: &sessionspb.HarnessInput_Replay{Replay: req}}); err != nil {
			resp, err := replayBroken(ctx, n)
			return nil, resp, err
		}
	} else {
		var err error
		if ts, err = s.openTurn(ctx, req); err != nil {
			resp, err := replayBroken(ctx, n)
			return nil, resp, err
		}
		defer ts.close()
	}
	stream := ts.ps.stream
	var replayed []middleRecord
	unknown := false
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, refuse(ReasonReplayIncomplete, n), nil
		}
		if err != nil {
			resp, err := replayBroken(ctx, n)
			return nil, resp, err
		}
		var m middleRecord
		switch e := ev.GetEvent().(type) {
		case *sessionspb.HarnessEvent_ModelRequest:
			m = middleRecord{journal.KindModelRequest, e.ModelRequest.GetRequestJson()}
		case *sessionspb.HarnessEvent_ModelCompletion:
			m = middleRecord{journal.KindModelCompletion, e.ModelCompletion.GetCompletionJson()}
		case *sessionspb.HarnessEvent_ToolCall:
			m = middleRecord{journal.KindToolCall, e.ToolCall.GetCallJson()}
		case *sessionspb.HarnessEvent_ToolResult:
			m = middleRecord{journal.KindToolResult, e.ToolResult.GetResultJson()}
		case *sessionspb.HarnessEvent_Terminal:
			term := e.Terminal
			resp := &sessionspb.VerifyTurnResponse{Records: int32(n), LiveCalls: term.GetLiveCalls()}
			switch {
			case term.GetLiveCalls() != 0:
				resp.Reason = ReasonReplayLiveCall
			case term.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED:
				if err := ended(ctx); err != nil {
					// The harness ended the replay at the deadline it
					// shares with ctx: the caller's own deadline, as when
					// the stream is cut (replayBroken).
					return nil, nil, status.FromContextError(err).Err()
				}
				resp.Reason = ReasonReplayIncomplete
			default:
				resp.Answer = term.GetAnswer()
				ts.reusable = !unknown
			}
			return replayed, resp, nil
		default:
			unknown = true
			continue
		}
		replayed = append(replayed, m)
	}
}

// replayBroken reports a replay stream that failed: the caller's own
// cancellation stays a context status; anything else is an incomplete replay,
// never a verified turn.
func replayBroken(ctx context.Context, n int) (*sessionspb.VerifyTurnResponse, error) {
	if ctx.Err() != nil {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return refuse(ReasonReplayIncomplete, n), nil
}
