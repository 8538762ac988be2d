package localpreview

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
)

// VerdictAnswered is the outcome of an ad-hoc Run input whose turn completed
// and replay-verified: it had nothing to check, so it is neither a pass nor a
// failure.
const VerdictAnswered = "answered"

// loop runs the selected examples one after another. After an execution
// failure, a deadline, a cancellation or a malformed judge reply, every
// later example is reported unknown without being sent.
type loop struct {
	opts    Options
	plan    *Plan
	exec    Executor
	rep     *Report
	aborted string
	// execFailed: an example failed to execute (not a verdict, a failure).
	execFailed bool
}

// The ad-hoc input, if any, comes last, after the selected examples.
func (l *loop) run(ctx context.Context) {
	for i, ex := range l.plan.Selected {
		res := l.one(ctx, ex, false)
		res.Range = l.rep.Examples[i].Range
		l.rep.Examples[i] = res
		l.emit(i)
	}
	if l.plan.AdHoc != nil {
		i := len(l.rep.Examples) - 1
		l.rep.Examples[i] = l.one(ctx, agentfile.Example{ID: adHocID, Input: *l.plan.AdHoc}, true)
		l.emit(i)
	}
}

func (l *loop) emit(i int) {
	ex := l.rep.Examples[i]
	switch ex.Verdict {
	case VerdictPass:
		l.rep.Summary.Pass++
	case VerdictFail:
		l.rep.Summary.Fail++
	case VerdictRefused:
		l.rep.Summary.Refused++
	case VerdictAnswered:
	default:
		l.rep.Summary.Unknown++
	}
	if l.opts.OnExample != nil {
		l.opts.OnExample(ex)
	}
}

func (l *loop) one(ctx context.Context, ex agentfile.Example, adHoc bool) ExampleResult {
	start := time.Now()
	res := ExampleResult{ID: ex.ID, AdHoc: adHoc, Verdict: VerdictUnknown}
	defer func() { res.DurationMs = ms(time.Since(start)) }()
	if l.aborted == "" && ctx.Err() != nil {
		l.aborted = "cancelled"
	}
	if l.aborted != "" {
		res.Message = "not sent: " + l.aborted
		return res
	}
	deadline := l.opts.ExampleDeadline
	if deadline <= 0 {
		deadline = DefaultExampleDeadline
	}
	ectx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()

	out, err := l.exec.Execute(ectx, Turn{
		Purpose:      PurposeAgent,
		ExampleID:    ex.ID,
		Instructions: l.plan.Agent.Instructions,
		Input:        ex.Input,
		Model:        l.plan.Routes.agent,
	})
	res.Journaled = out.Journaled
	if err != nil {
		l.aborted = "an earlier example failed to execute"
		l.execFailed = true
		res.Message = "execution failed: " + err.Error()
		return res
	}
	if l.opts.ShowContent && out.Completed {
		answer := out.Answer
		res.Answer = &answer
	}
	if problem := l.turnProblem(ctx, ectx, out, deadline); problem != "" {
		res.Message = problem
		return res
	}
	res.Verified = true
	if adHoc {
		res.Verdict = VerdictAnswered
		res.Message = "answered; ad-hoc input has no assertions"
		return res
	}
	sampler := &judgeSampler{exec: l.exec, routes: l.plan.Routes, example: ex.ID}
	for _, a := range ex.Assertions {
		r := judge.Evaluate(ectx, a, ex.Input, out.Answer, sampler)
		res.Assertions = append(res.Assertions, r)
		if r.Abort {
			l.aborted = "an earlier judge reply was malformed or unavailable"
			break
		}
	}
	if len(res.Assertions) < len(ex.Assertions) {
		// Assertions after an abort were not checked: the example cannot
		// pass, whatever the ones before said.
		res.Verdict = VerdictUnknown
		res.Message = "not all assertions were checked: " + l.aborted
	} else {
		v := judge.Verdict(res.Assertions)
		res.Verdict, res.Message = string(v.Outcome), v.Message
	}
	if ectx.Err() != nil && res.Verdict == VerdictPass {
		res.Verdict, res.Message = VerdictUnknown, "the example deadline expired while judging"
	}
	l.decide(&res, ex)
	if !res.Journaled || !res.Verified {
		if res.Verdict == VerdictPass {
			res.Verdict, res.Message = VerdictUnknown, "not a journaled, replay-verified turn"
		}
	}
	return res
}

// turnProblem says why a turn's outcome cannot be judged, or "".
func (l *loop) turnProblem(ctx, ectx context.Context, out Outcome, deadline time.Duration) string {
	switch {
	case out.Cancelled && ctx.Err() != nil:
		l.aborted = "cancelled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			l.aborted = "the invocation bound expired"
		}
		return l.aborted
	case out.Cancelled && ectx.Err() != nil:
		l.aborted = "an earlier example exceeded its deadline"
		return fmt.Sprintf("the example deadline (%s) expired", deadline)
	case !out.Completed:
		l.aborted = "an earlier example failed to execute"
		if out.Problem == "" {
			return "the turn did not complete"
		}
		return out.Problem
	case !out.Journaled:
		return "not journaled: a result that is not journaled and replay-verified cannot pass"
	case !out.Verified:
		l.aborted = "an earlier turn failed replay verification"
		return out.Problem
	}
	return ""
}

// decide points at the assertion that decided a fail or unknown verdict.
func (l *loop) decide(res *ExampleResult, ex agentfile.Example) {
	want := judge.Outcome(res.Verdict)
	if res.Verdict != VerdictFail && res.Verdict != VerdictUnknown {
		return
	}
	for i, a := range res.Assertions {
		if a.Outcome == want {
			idx := i
			res.Deciding = &idx
			if i < len(ex.Assertions) {
				r := ex.Assertions[i].Range
				res.DecidingRange = &r
			}
			return
		}
	}
}

// demote turns every pass into unknown: used when the journal could not be
// finalized after the examples ran.
func (l *loop) demote(why string) {
	for i := range l.rep.Examples {
		if l.rep.Examples[i].Verdict == VerdictPass {
			l.rep.Examples[i].Verdict = VerdictUnknown
			l.rep.Examples[i].Message = why
			l.rep.Summary.Pass--
			l.rep.Summary.Unknown++
		}
	}
}

func (l *loop) journaled() bool {
	for _, ex := range l.rep.Examples {
		if !ex.Journaled {
			return false
		}
	}
	return len(l.rep.Examples) > 0
}

// Sample runs one judge sample in a fresh tool-free Session in the same
// journal. Only a completed, replay-verified sample is returned.
func (s *judgeSampler) Sample(ctx context.Context, judgeModel, instructions, input string) (string, error) {
	id, ok := s.routes.judgeIdentity(judgeModel)
	if !ok {
		return "", fmt.Errorf("no judge route for model %q", judgeModel)
	}
	out, err := s.exec.Execute(ctx, Turn{Purpose: PurposeJudge, ExampleID: s.example, Instructions: instructions, Input: input, Model: id})
	if err != nil {
		return "", fmt.Errorf("judge sample: %w", err)
	}
	switch {
	case out.Cancelled:
		return "", fmt.Errorf("judge sample: cancelled")
	case !out.Completed:
		return "", fmt.Errorf("judge sample: %s", out.Problem)
	case !out.Journaled || !out.Verified:
		return "", fmt.Errorf("judge sample: not a journaled, replay-verified turn")
	}
	return out.Answer, nil
}
