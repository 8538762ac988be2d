package localpreview

import (
	"context"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessions"
	"github.com/kmxdev/kmx/sidecar/internal/sessions/sessionspb"
)

// Purposes of a turn.
const (
	PurposeAgent = "agent"
	PurposeJudge = "judge"
)

// Turn is one unit of execution: an agent example or one judge sample.
type Turn struct {
	Purpose      string
	ExampleID    string
	Instructions string
	Input        string
	Model        route.Identity
	// Tools is the example's frozen tool set; empty runs on "chat".
	Tools []localtools.Tool
}

// Outcome is what an Executor reports for a Turn. Only an outcome with
// Completed and Verified both true can lead to a pass.
type Outcome struct {
	Answer string
	// Completed: the turn ran to a terminal "completed" state.
	Completed bool
	// Verified: all five records are journaled and replaying them gave the
	// same answer with zero live model calls.
	Verified bool
	// Journaled: the turn was written to the run's journal.
	Journaled bool
	// Problem is fixed text saying why the turn did not complete or verify.
	Problem string
	// Cancelled: the turn stopped because its context ended.
	Cancelled bool
	// ToolUses is a verified tool turn's answered calls, in batch order.
	ToolUses []ToolUse
	// SessionID is the journal session of the turn, when it was placed.
	SessionID string
}

// Executor sits between the example loop and execution. Any Executor gets
// the exact model, route and tool set in the Turn and must not retry, drop a
// tool, fall back to another model or report an incomplete turn as complete. A
// non-journaled executor reports Journaled false, and so can never be
// reported as a journaled result.
type Executor interface {
	Execute(ctx context.Context, t Turn) (Outcome, error)
}

// sessionsExecutor is the default Executor: each Turn gets a fresh Session
// on the embedded Sessions service, then is verified by replay.
type sessionsExecutor struct {
	client sessionspb.SessionsClient
}

var _ Executor = (*sessionsExecutor)(nil)

func newSessionsExecutor(emb *sessions.Embedded) *sessionsExecutor {
	return &sessionsExecutor{client: emb.Client()}
}

func (e *sessionsExecutor) Execute(ctx context.Context, t Turn) (Outcome, error) {
	placed, err := e.client.CreateSession(ctx, &sessionspb.CreateSessionRequest{
		Purpose:   t.Purpose,
		ExampleId: t.ExampleID,
		Model:     &sessionspb.ModelIdentity{Route: t.Model.Route, Model: t.Model.Model},
		Tools:     toolSpecs(t.Tools),
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("place session: %w", err)
	}
	res, err := e.client.RunTurn(ctx, &sessionspb.RunTurnRequest{
		SessionId:    placed.GetSessionId(),
		Instructions: t.Instructions,
		Input:        t.Input,
	})
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{Journaled: true, Cancelled: true, Problem: "cancelled"}, nil
		}
		return Outcome{}, fmt.Errorf("run turn: %w", err)
	}
	out := Outcome{Journaled: true, Answer: res.GetAnswer(), SessionID: placed.GetSessionId()}
	switch res.GetState() {
	case sessionspb.TurnState_TURN_STATE_COMPLETED:
		out.Completed = true
	case sessionspb.TurnState_TURN_STATE_CANCELLED:
		out.Cancelled = true
		out.Problem = "cancelled"
		return out, nil
	default:
		out.Problem = res.GetError()
		if out.Problem == "" {
			out.Problem = "the turn did not complete"
		}
		return out, nil
	}
	// Verification reads only the journal: it is not cut short by a
	// deadline that expired right after the answer arrived.
	vctx := context.WithoutCancel(ctx)
	v, err := e.client.VerifyTurn(vctx, &sessionspb.VerifyTurnRequest{SessionId: placed.GetSessionId(), Turn: res.GetTurn()})
	if err != nil {
		return Outcome{}, fmt.Errorf("verify turn: %w", err)
	}
	switch {
	case !v.GetVerified():
		out.Problem = "not replay-verified: " + v.GetReason()
	case v.GetLiveCalls() != 0:
		out.Problem = "not replay-verified: replay attempted a live model call"
	case v.GetAnswer() != res.GetAnswer():
		out.Problem = "not replay-verified: replay answer differs"
	default:
		out.Verified = true
		for _, u := range v.GetToolUses() {
			out.ToolUses = append(out.ToolUses, ToolUse{Name: u.GetName(), Source: u.GetSource(), Dispatched: u.GetDispatched()})
		}
	}
	return out, nil
}

func toolSpecs(tools []localtools.Tool) []*sessionspb.ToolSpec {
	out := make([]*sessionspb.ToolSpec, 0, len(tools))
	for _, t := range tools {
		s := &sessionspb.ToolSpec{Name: t.Name, State: t.State, Source: t.Source, Pending: t.Pending}
		for _, c := range t.Recorded {
			s.Recorded = append(s.Recorded, &sessionspb.SavedCall{Arguments: c.Arguments, Result: c.Result})
		}
		out = append(out, s)
	}
	return out
}
