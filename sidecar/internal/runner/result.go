package runner

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
)

// countingExecutor counts the turns sent by purpose. A re-grade's agent
// turns never reach it (they replay from the source journal), so its agent
// count is the number of agent model calls the run made.
type countingExecutor struct {
	next         Executor
	agent, judge atomic.Int64
}

func (c *countingExecutor) Execute(ctx context.Context, t Turn) (Outcome, error) {
	if t.Purpose == invocation.PurposeJudge {
		c.judge.Add(1)
	} else {
		c.agent.Add(1)
	}
	return c.next.Execute(ctx, t)
}

// judgeSpecs are example ex's llmJudge assertions with their resolved judge
// identity and effective threshold.
func judgeSpecs(rt *invocation.Routes, ex agentfile.Example) []journal.ResultJudge {
	var out []journal.ResultJudge
	for _, a := range ex.AllAssertions() {
		if a.Type != agentfile.LLMJudge {
			continue
		}
		th := judge.DefaultThreshold
		if a.Operands().Threshold != nil {
			th = *a.Operands().Threshold
		}
		spec := journal.ResultJudge{Rubric: a.Operands().Rubric, Threshold: th}
		if id, ok := rt.JudgeIdentity(a.Operands().JudgeModel); ok {
			spec.Model = journal.ModelIdentity{Route: id.Route, Model: id.Model}
		}
		out = append(out, spec)
	}
	return out
}

// writeResult appends the run.result record: the verdicts this run reports,
// chained with its turns, before the journal is finished.
func writeResult(ctx context.Context, j *journal.Journal, plan *invocation.Plan, rep *Report, res journal.RunResult) error {
	// Only the examples with llmJudge assertions have judges to record: a
	// map of every example (a copy of each) was the largest allocation at
	// the end of a long run, when the heap holds every result.
	judges := map[string][]journal.ResultJudge{}
	for _, ex := range plan.Selected {
		if js := judgeSpecs(plan.Routes, ex); js != nil {
			judges[ex.ID] = js
		}
	}
	res.Verdict = fileVerdict(rep.Examples)
	if res.Trials == 0 {
		res.Trials = 1
	}
	res.Examples = make([]journal.ResultExample, 0, len(rep.Examples))
	for _, ex := range rep.Examples {
		if ex.AdHoc {
			continue
		}
		if len(ex.TrialResults) > 0 {
			// Each trial with its own turns and judge samples, so a
			// read-back shows every trial's answers and the samples that
			// judged them (not all of them on the first trial).
			for k, tr := range ex.TrialResults {
				res.Examples = append(res.Examples, resultExample(journal.ResultExample{ID: ex.ID, Trial: k + 1, Verdict: tr.Verdict, Message: tr.Message, DurationMs: tr.DurationMs, SessionID: tr.sessionID, Judges: judges[ex.ID], JudgeSessions: tr.judgeSessions}, tr.Turns, tr.Usage))
			}
			continue
		}
		res.Examples = append(res.Examples, resultExample(journal.ResultExample{ID: ex.ID, Verdict: ex.Verdict, Message: ex.Message, DurationMs: ex.DurationMs, SessionID: ex.sessionID, Judges: judges[ex.ID], JudgeSessions: ex.judgeSessions}, ex.Turns, ex.Usage))
	}
	payload, err := journal.Encode(res)
	if err != nil {
		return err
	}
	if _, err := j.Append(context.WithoutCancel(ctx), journal.Record{SessionID: journal.RunSession, Kind: journal.KindRunResult, Version: journal.SchemaVersion, Payload: payload}); err != nil {
		return fmt.Errorf("record the run's result: %w", err)
	}
	return nil
}

// resultExample completes an example's (or a trial's) result record with
// its turns and its agent usage (recorded only when every turn reported
// one).
func resultExample(re journal.ResultExample, turns []TurnResult, u *Usage) journal.ResultExample {
	for _, t := range turns {
		re.Turns = append(re.Turns, journal.ResultTurn{Turn: t.Turn, Verdict: t.Verdict, Message: t.Message, SessionID: t.sessionID, JudgeSessions: t.judgeSessions})
	}
	if u != nil && u.Unreported == 0 {
		re.Usage = &journal.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	}
	return re
}
