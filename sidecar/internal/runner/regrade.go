package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// regradeExecutor answers agent turns by copying their source session into
// this run's journal and replaying it there with zero model calls; judge
// turns reuse a source sample when allowed, else go to next (a fresh
// sample, counted).
type regradeExecutor struct {
	rg     *readback.Regrade
	plan   *invocation.Plan
	j      *journal.Journal
	client sessionspb.SessionsClient
	next   Executor

	mu     sync.Mutex
	used   map[*readback.SourceSession]bool
	reused atomic.Int64
	replay atomic.Int64
}

func (e *regradeExecutor) Execute(ctx context.Context, t Turn) (Outcome, error) {
	if t.Purpose == invocation.PurposeAgent {
		s := e.rg.Agent[t.ExampleID]
		if s == nil {
			// The loop never sends a refused example; reaching here is a bug,
			// and nothing is sent.
			return Outcome{Problem: "not re-graded"}, nil
		}
		e.replay.Add(1)
		return e.copyAndVerify(ctx, s)
	}
	if s := e.reusable(t); s != nil {
		e.reused.Add(1)
		return e.copyAndVerify(ctx, s)
	}
	return e.next.Execute(ctx, t)
}

// reusable finds an unused verified source judge sample for t: the same
// example, judge instructions, input (rubric, example input and answer,
// byte for byte) and judge model, and a source llmJudge spec (rubric, judge
// model, threshold) equal to the current one.
func (e *regradeExecutor) reusable(t Turn) *readback.SourceSession {
	model := journal.ModelIdentity{Route: t.Model.Route, Model: t.Model.Model}
	var ex agentfile.Example
	for _, x := range e.plan.Selected {
		if x.ID == t.ExampleID {
			ex = x
		}
	}
	allowed := false
	for _, cur := range judgeSpecs(e.plan.Routes, ex) {
		if cur.Model != model || !judgeInputHasRubric(t.Input, cur.Rubric) {
			continue
		}
		for _, old := range e.rg.Specs[t.ExampleID] {
			if old == cur {
				allowed = true
			}
		}
	}
	if !allowed {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.rg.Judges {
		if e.used[s] || s.Placed.ExampleID != t.ExampleID || s.Placed.Model != model ||
			s.Started.Instructions != t.Instructions || s.Started.Input != t.Input {
			continue
		}
		if e.used == nil {
			e.used = map[*readback.SourceSession]bool{}
		}
		e.used[s] = true
		return s
	}
	return nil
}

// copyAndVerify appends the source session's records to this run's
// journal, unchanged, and replays the turn there. Only a turn that replays
// to the source's answer with zero model calls is verified.
func (e *regradeExecutor) copyAndVerify(ctx context.Context, s *readback.SourceSession) (Outcome, error) {
	wctx := context.WithoutCancel(ctx)
	for _, r := range s.Records {
		r.Seq = 0
		if _, err := e.j.Append(wctx, r); err != nil {
			return Outcome{}, fmt.Errorf("copy the source turn: %w", err)
		}
	}
	out := Outcome{Journaled: true, Completed: true, Answer: s.Answer, SessionID: s.Placed.SessionID}
	v, err := e.client.VerifyTurn(wctx, &sessionspb.VerifyTurnRequest{SessionId: s.Placed.SessionID, Turn: 1})
	if err != nil {
		return Outcome{}, fmt.Errorf("verify the re-graded turn: %w", err)
	}
	// The source turn's trace comes back with the verification, for the
	// trajectory and tool assertions: the same calls a live turn reports.
	out.verify(v)
	return out, nil
}

// judgeInputHasRubric says whether a judge turn's input (the JSON object
// the judge grades) carries exactly this rubric.
func judgeInputHasRubric(input, rubric string) bool {
	var p struct {
		Rubric string `json:"rubric"`
	}
	return json.Unmarshal([]byte(input), &p) == nil && p.Rubric == rubric
}

// notRegraded says why example id is not re-graded (rg nil: no re-grade),
// or "".
// unanswered says why a multi-turn example's turn name has no source
// answer to re-grade (the source stopped before it), or "".
func unanswered(rg *readback.Regrade, name string) string {
	if rg == nil {
		return ""
	}
	return rg.Unanswered[name]
}

func notRegraded(rg *readback.Regrade, id string) string {
	if rg == nil {
		return ""
	}
	return rg.Refused[id]
}
