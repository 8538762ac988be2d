package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessions"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
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
	// Workspace is the example's scratch copy of its fixture workspace
	// (kmx-workspace-tools-v1), or nil.
	Workspace *sessionspb.WorkspaceRef
	// History is a multi-turn example's earlier turns (inputs and
	// answers, oldest first), sent as `kmx chat` sends a conversation's.
	History []journal.HistoryMessage
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
	ToolUses []judge.ToolUse
	// SessionID is the journal session of the turn, when it was placed.
	SessionID string
	// WorkspaceOutcome is a verified workspace turn's journaled
	// workspace.outcome payload, what its file assertions are judged from.
	WorkspaceOutcome []byte
	// DurationMs and Usage are a verified turn's journaled measures: its
	// duration (nil when none was journaled) and the agent's token usage
	// over its model sends (nil when the route reported none).
	DurationMs *float64
	Usage      *Usage
}

// verify takes a completed turn's replay verification: the turn is
// verified only when its replay gave out.Answer with zero live model calls,
// and then carries the journaled measures and the replay-verified calls
// its trajectory and tool assertions are judged on. A live turn and a
// re-graded one are verified alike.
func (out *Outcome) verify(v *sessionspb.VerifyTurnResponse) {
	switch {
	case !v.GetVerified():
		out.Problem = "not replay-verified: " + v.GetReason()
	case v.GetLiveCalls() != 0:
		out.Problem = "not replay-verified: replay attempted a live model call"
	case v.GetAnswer() != out.Answer:
		out.Problem = "not replay-verified: replay answer differs"
	default:
		out.Verified, out.WorkspaceOutcome = true, v.GetWorkspaceOutcomeJson()
		out.DurationMs, out.Usage = measures(v)
		for _, u := range v.GetToolUses() {
			out.ToolUses = append(out.ToolUses, judge.ToolUse{Name: u.GetName(), Source: u.GetSource(), Dispatched: u.GetDispatched(), Arguments: u.GetArguments()})
		}
	}
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
	emb    *sessions.Embedded
	client sessionspb.SessionsClient
}

var _ Executor = (*sessionsExecutor)(nil)

func newSessionsExecutor(emb *sessions.Embedded) *sessionsExecutor {
	return &sessionsExecutor{emb: emb, client: emb.Client()}
}

// Execute runs the Turn in one Execute request: the service places a fresh
// Session, runs the turn and verifies it by replay from the journal.
func (e *sessionsExecutor) Execute(ctx context.Context, t Turn) (Outcome, error) {
	var out Outcome
	ended := false
	var broken error // the service broke the contract: never a cancellation
	// The turn crosses the first in-memory gRPC listener here, runner to
	// Sessions (docs/architecture.md); Sessions sends it on to the harness
	// over the second (sessions.service.openTurn).
	err := e.emb.Execute(ctx, &sessionspb.ExecuteRequest{
		Session: &sessionspb.CreateSessionRequest{
			Purpose:   t.Purpose,
			ExampleId: t.ExampleID,
			Model:     &sessionspb.ModelIdentity{Route: t.Model.Route, Model: t.Model.Model},
			Tools:     harness.ToolsToProto(t.Tools),
			Workspace: t.Workspace,
		},
		Instructions: t.Instructions,
		Input:        t.Input,
		History:      harness.HistoryToProto(t.History),
	}, func(ev *sessionspb.ExecuteEvent) error {
		switch e := ev.GetEvent().(type) {
		case *sessionspb.ExecuteEvent_Placed:
			out.Journaled, out.SessionID = true, e.Placed.GetSessionId()
		case *sessionspb.ExecuteEvent_Turn:
			ended = true
			out.Answer = e.Turn.GetAnswer()
			switch e.Turn.GetState() {
			case sessionspb.TurnState_TURN_STATE_COMPLETED:
				out.Completed = true
			case sessionspb.TurnState_TURN_STATE_CANCELLED:
				out.Cancelled, out.Problem = true, "cancelled"
			default:
				out.Problem = e.Turn.GetError()
				if out.Problem == "" {
					out.Problem = "the turn did not complete"
				}
			}
		case *sessionspb.ExecuteEvent_Verified:
			if !out.Completed {
				broken = errors.New("execute turn: a verification arrived for a turn that did not complete")
				return broken
			}
			out.verify(e.Verified)
		}
		return nil
	})
	if broken != nil {
		return Outcome{}, broken
	}
	if err != nil {
		// Once the turn has ended the example deadline no longer matters,
		// but the stream goes with the context: a turn whose verification
		// was cut short is cancelled, never verified.
		return cancelledOr(ctx, out, fmt.Errorf("execute turn: %w", problem.Clean(err)))
	}
	switch {
	case !ended || !out.Journaled:
		return Outcome{}, fmt.Errorf("execute turn: %w", sessions.ErrExecuteEnded)
	case out.Completed && !out.Verified && out.Problem == "":
		out.Problem = "not replay-verified: no verification came back"
	}
	return out, nil
}

// cancelledOr is what a broken Execute stream means: when ctx has ended,
// the turn was cancelled (with what was journaled of it so far); otherwise
// err, an execution failure.
func cancelledOr(ctx context.Context, out Outcome, err error) (Outcome, error) {
	if ctx.Err() == nil {
		return Outcome{}, err
	}
	out.Cancelled, out.Problem, out.Verified = true, "cancelled", false
	return out, nil
}

// measures reads a verification's journaled duration and usage.
func measures(v *sessionspb.VerifyTurnResponse) (*float64, *Usage) {
	var d *float64
	if us := v.GetDurationUs(); us > 0 {
		f := float64(us) / 1000
		d = &f
	}
	var u *Usage
	if pu := v.GetUsage(); pu != nil {
		u = &Usage{PromptTokens: int(pu.GetPromptTokens()), CompletionTokens: int(pu.GetCompletionTokens()), TotalTokens: int(pu.GetTotalTokens())}
	}
	return d, u
}
