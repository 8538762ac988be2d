package sessions

import (
	"bytes"
	"context"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// Fixed reasons only a tool turn gives.
const (
	ReasonToolTrace       = "tool trace incomplete or out of order"
	ReasonReplayToolTrace = "replay tool trace differs"
	ReasonToolSource      = "tool result does not match its offered source"
)

// resultsMatchSources checks each journaled result against the tool set
// frozen in the placement: an offline source (disabled, recorded,
// unavailable) is recomputed from that set alone, without any executor, and
// must give the journaled answer exactly; a live result needs a tool that
// was offered as live.
func resultsMatchSources(tt toolTurn) bool {
	set := tt.placed.Tools
	for i, r := range tt.tr.results {
		tool, ok := localtools.Find(set, r.Name)
		if !ok {
			return false
		}
		if r.Source == localtools.SourceLive || r.Source == localtools.SourceWorkspace {
			// Read back, never recomputed: the live executor and the
			// scratch copy are gone. The tool must have been offered so.
			if tool.Source != r.Source || !r.Dispatched {
				return false
			}
			continue
		}
		want, err := localtools.Dispatch(tool, tt.tr.calls[i].Arguments)
		if err != nil || want.Text != r.Result || want.Source != r.Source || want.Dispatched != r.Dispatched {
			return false
		}
	}
	return true
}

// toolTurn is one kmx-local-tools-v1 turn read from the journal: its
// placement (with the frozen tool set), start, the checked trace with each
// record's payload exactly as journaled, and its terminal.
type toolTurn struct {
	placed   journal.SessionPlaced
	started  journal.TurnStarted
	terminal journal.TurnTerminal
	tr       *trace
	// middle holds the trace's records in journal order.
	middle []middleRecord
}

type middleRecord struct {
	kind    journal.Kind
	payload []byte
}

// isToolSession reports whether a session's records begin with a placement
// on the tool harness.
//
// placed is that placement decoded (nil when the first record is not a
// placement of the current version that decodes), so a chat turn's check
// does not decode it a second time.
func isToolSession(recs []journal.Record) (tools bool, placed *journal.SessionPlaced) {
	if len(recs) == 0 || recs[0].Kind != journal.KindSessionPlaced || recs[0].Version != journal.SchemaVersion {
		return false, nil
	}
	var p journal.SessionPlaced
	if journal.Decode(recs[0].Payload, &p) != nil {
		return false, nil
	}
	return harness.IsTools(p.Harness), &p
}

// collectToolTurn is the tool harness's complete-invocation validator: the
// placement first, then for the requested turn exactly one turn.started,
// a trace the live checks accept record by record, and one completed
// turn.terminal whose answer is the final completion's text.
func collectToolTurn(recs []journal.Record, sessionID string, turn int) (toolTurn, int, string) {
	var tt toolTurn
	n := 0
	started, ended := false, false
	for i, r := range recs {
		if r.Version != journal.SchemaVersion {
			return tt, n, ReasonVersionPrefix + string(r.Kind)
		}
		if r.Kind == journal.KindSessionPlaced {
			if i != 0 || r.Turn != 0 {
				return tt, n, ReasonOutOfOrder
			}
			if journal.Decode(r.Payload, &tt.placed) != nil {
				return tt, n, ReasonMalformedPrefix + string(r.Kind)
			}
			n++
			continue
		}
		if i == 0 {
			return tt, n, ReasonMissingPrefix + string(journal.KindSessionPlaced)
		}
		if r.Turn != turn {
			continue
		}
		if ended {
			return tt, n, ReasonOutOfOrder
		}
		switch r.Kind {
		case journal.KindTurnStarted:
			if started {
				return tt, n, ReasonDuplicatePrefix + string(r.Kind)
			}
			if journal.Decode(r.Payload, &tt.started) != nil {
				return tt, n, ReasonMalformedPrefix + string(r.Kind)
			}
			if tt.started.Turn != turn {
				return tt, n, ReasonTurnMismatch
			}
			started = true
			tt.tr = newTrace(tt.placed.Harness, turn, tt.placed.Model.Model)
		case journal.KindTurnTerminal:
			if !started {
				return tt, n, ReasonOutOfOrder
			}
			if journal.Decode(r.Payload, &tt.terminal) != nil {
				return tt, n, ReasonMalformedPrefix + string(r.Kind)
			}
			if tt.terminal.Turn != turn {
				return tt, n, ReasonTurnMismatch
			}
			ended = true
		case journal.KindModelRequest, journal.KindModelCompletion, journal.KindToolCall, journal.KindToolResult, journal.KindWorkspaceOutcome:
			if !started {
				return tt, n, ReasonOutOfOrder
			}
			if !tt.tr.accept(r.Kind, r.Payload) {
				return tt, n, ReasonToolTrace
			}
			// The workspace outcome is read back, not replayed: the
			// scratch copy it describes is gone (tt.tr keeps it).
			if r.Kind != journal.KindWorkspaceOutcome {
				tt.middle = append(tt.middle, middleRecord{kind: r.Kind, payload: r.Payload})
			}
		default:
			return tt, n, ReasonUnknownKind
		}
		n++
	}
	switch {
	case tt.placed.SessionID == "":
		return tt, n, ReasonMissingPrefix + string(journal.KindSessionPlaced)
	case !started:
		return tt, n, ReasonMissingPrefix + string(journal.KindTurnStarted)
	case !ended:
		return tt, n, ReasonMissingPrefix + string(journal.KindTurnTerminal)
	case tt.placed.SessionID != sessionID:
		return tt, n, ReasonSessionMismatch
	case tt.started.Model != tt.placed.Model:
		return tt, n, ReasonModelMismatch
	case (tt.placed.Harness == harness.WorkspaceTools) != (tt.placed.Workspace != nil):
		return tt, n, ReasonToolTrace
	case tt.terminal.State != journal.StateCompleted:
		return tt, n, ReasonNotCompleted
	}
	final := tt.tr.final()
	if final == nil {
		return tt, n, ReasonToolTrace
	}
	if !resultsMatchSources(tt) {
		return tt, n, ReasonToolSource
	}
	if tt.terminal.Answer != final.Text {
		return tt, n, ReasonReplayAnswer
	}
	return tt, n, ""
}

// replayTools replays a journaled tool turn through the tool harness with
// the model and every tool source forbidden (counted): the model answers
// from the journaled completions, each call from its journaled result. The
// replayed trace must equal the journaled one byte for byte. history is
// the conversation the turn was sent with (empty for an example).
func (s *service) replayTools(ctx context.Context, tt toolTurn, n int, history []*sessionspb.ChatMessage, ts *turnStream) (*sessionspb.VerifyTurnResponse, error) {
	rec := &sessionspb.RecordedExchange{}
	for _, m := range tt.middle {
		switch m.kind {
		case journal.KindModelRequest:
			rec.Sends = append(rec.Sends, &sessionspb.RecordedSend{RequestJson: m.payload})
		case journal.KindModelCompletion:
			// The trace holds each completion right after its request.
			rec.Sends[len(rec.Sends)-1].CompletionJson = m.payload
		case journal.KindToolResult:
			rec.ToolResultJson = append(rec.ToolResultJson, m.payload)
		}
	}
	var ws *sessionspb.WorkspaceRef
	if p := tt.placed.Workspace; p != nil {
		// No key: a replay never opens a scratch copy.
		ws = &sessionspb.WorkspaceRef{Fixture: p.Fixture, Hash: p.Hash}
	}
	replayed, resp, err := s.replayStream(ctx, &sessionspb.HarnessTurnRequest{
		SessionId: tt.placed.SessionID, Harness: tt.placed.Harness, Purpose: tt.placed.Purpose,
		Turn:         int32(tt.started.Turn),
		Model:        &sessionspb.ModelIdentity{Route: tt.placed.Model.Route, Model: tt.placed.Model.Model},
		Instructions: tt.started.Instructions, Input: tt.started.Input, History: history,
		Tools:  harness.ToolsToProto(tt.placed.Tools),
		Replay: rec, Workspace: ws,
	}, n, ts)
	if err != nil || resp.Reason != "" {
		return resp, err
	}
	switch {
	case !sameTrace(replayed, tt.middle):
		resp.Reason = ReasonReplayToolTrace
	case resp.Answer != tt.terminal.Answer:
		resp.Reason = ReasonReplayAnswer
	default:
		resp.Verified, resp.ToolUses, resp.WorkspaceOutcomeJson = true, tt.tr.uses(), tt.tr.outcome
		return resp, nil
	}
	resp.Answer = ""
	return resp, nil
}

func sameTrace(a, b []middleRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].kind != b[i].kind || !bytes.Equal(a[i].payload, b[i].payload) {
			return false
		}
	}
	return true
}
