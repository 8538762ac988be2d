package sessions

import (
	"context"
	"slices"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/journal/journaltest"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// finishedToolTurn runs one fake-model tool turn whose one call is answered
// from a recording, finishes the run and returns it with the session ID
// and each record's seq by kind.
func finishedToolTurn(t *testing.T) (*testRun, string, map[journal.Kind]int64) {
	t.Helper()
	run, id, recs := finishTurn(t, func(c sessionspb.SessionsClient) string {
		placed, err := c.CreateSession(context.Background(), &sessionspb.CreateSessionRequest{
			Purpose: harness.PurposeAgent, ExampleId: "weekly", Model: fakeIdentity,
			Tools: []*sessionspb.ToolSpec{{Name: "ping", State: localtools.Enabled, Source: localtools.SourceRecorded,
				Recorded: []*sessionspb.SavedCall{{Arguments: "{}", Result: `{"pong": true}`}}}},
		})
		if err != nil || placed.GetHarness() != harness.LocalTools {
			t.Fatalf("create tool session: %v %v", placed, err)
		}
		resp, err := c.RunTurn(context.Background(), &sessionspb.RunTurnRequest{SessionId: placed.GetSessionId(), Instructions: "Call the tool `ping`", Input: "hi"})
		if err != nil || resp.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED || resp.GetAnswer() != `{"pong":true}` {
			t.Fatalf("tool turn = %v %v", resp, err)
		}
		return placed.GetSessionId()
	})
	var kinds []journal.Kind
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	want := []journal.Kind{journal.KindSessionPlaced, journal.KindTurnStarted, journal.KindModelRequest, journal.KindModelCompletion,
		journal.KindToolCall, journal.KindToolResult, journal.KindModelRequest, journal.KindModelCompletion, journal.KindTurnTerminal}
	if !slices.Equal(kinds, want) {
		t.Fatalf("journaled kinds %v, want %v", kinds, want)
	}
	return run, id, firstSeqs(recs)
}

// TestToolTurnPassesOnlyWhenItsTraceReplaysWithZeroCalls: an untampered tool
// turn verifies with zero model and tool calls (the resolver fails the test
// if consulted); a forged result, a forged call, a forged offered source
// or a missing record never verifies.
func TestToolTurnPassesOnlyWhenItsTraceReplaysWithZeroCalls(t *testing.T) {
	run, id, _ := finishedToolTurn(t)
	v := verifyReopened(t, run, id)
	if !v.GetVerified() || v.GetLiveCalls() != 0 || v.GetRecords() != 9 || v.GetAnswer() != `{"pong":true}` {
		t.Fatalf("verify = %v", v)
	}
	if u := v.GetToolUses(); len(u) != 1 || u[0].GetName() != "ping" || u[0].GetSource() != localtools.SourceRecorded || !u[0].GetDispatched() {
		t.Errorf("tool uses = %v", u)
	}

	t.Run("forged result", func(t *testing.T) {
		run, id, seqs := finishedToolTurn(t)
		rewrite(t, run, seqs[journal.KindToolResult], true, func(v *journal.ToolResult) { v.Result = `{"pong": false}` })
		if v := verifyReopened(t, run, id); v.GetVerified() {
			t.Errorf("a forged tool result verified: %v", v)
		}
	})
	t.Run("forged source", func(t *testing.T) {
		run, id, seqs := finishedToolTurn(t)
		// Only the result's source changes: the answer text and the
		// model sends stay the same, so only the offered set can tell.
		rewrite(t, run, seqs[journal.KindToolResult], true, func(v *journal.ToolResult) { v.Source = localtools.SourceLive })
		wantRefused(t, verifyReopened(t, run, id), ReasonToolSource)
	})
	t.Run("forged offered set", func(t *testing.T) {
		run, id, seqs := finishedToolTurn(t)
		rewrite(t, run, seqs[journal.KindSessionPlaced], true, func(v *journal.SessionPlaced) {
			v.Tools[0].Source = localtools.SourceUnavailable
			v.Tools[0].Recorded = nil
		})
		if v := verifyReopened(t, run, id); v.GetVerified() {
			t.Errorf("a forged tool set verified: %v", v)
		}
	})
	t.Run("forged call arguments", func(t *testing.T) {
		run, id, seqs := finishedToolTurn(t)
		rewrite(t, run, seqs[journal.KindToolCall], true, func(v *journal.ToolCall) { v.Arguments = `{"x":1}` })
		wantRefused(t, verifyReopened(t, run, id), ReasonToolTrace)
	})
	t.Run("missing tool result", func(t *testing.T) {
		run, id, seqs := finishedToolTurn(t)
		journaltest.DeleteRecord(t, run.j.Path(), seqs[journal.KindToolResult])
		if v := verifyReopened(t, run, id); v.GetVerified() {
			t.Errorf("a trace without its tool result verified: %v", v)
		}
	})
}
