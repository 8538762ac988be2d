package runner

import (
	"fmt"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// MaxTrials bounds Options.Trials.
const MaxTrials = 20

// trialsOf is how many times each example runs (Options.Trials; 0 is 1).
func trialsOf(opts Options) int {
	if opts.Trials <= 0 {
		return 1
	}
	return opts.Trials
}

// TrialsWithRegrade is why trials and a re-grade are refused together, and
// TrialsWithRegradeNext what to change, in a front's words; the CLI's usage
// error says the same. A re-grade grades journaled answers with zero agent
// calls: N trials of it would grade the same answers N times (identical
// verdicts for contains, notContains and regex; reused or re-sampled judge
// samples only), which would look like evidence of stability and is none.
// Flakiness is measured with fresh answers: --trials without --from.
func TrialsWithRegrade(w problem.Words) string {
	return w(problem.Trials, "") + " and " + w(problem.From, "") + " cannot be combined: a re-grade grades each journaled answer once, and grading the same answers N times is no trial of the model"
}

// TrialsWithRegradeNext: see TrialsWithRegrade.
func TrialsWithRegradeNext(w problem.Words) string {
	return "drop " + w(problem.Trials, "") + " to re-grade the run's answers (from a trials run, each example's first verified trial), or drop " + w(problem.From, "") + " to run N fresh trials"
}

// checkTrials refuses a trial count outside 1..MaxTrials and trials on
// anything but a plain Test of examples.
func checkTrials(opts Options, mode invocation.Mode) error {
	switch {
	case opts.Trials < 0 || opts.Trials > MaxTrials:
		return invocation.RefuseIn(func(w problem.Words) string {
			return fmt.Sprintf("pass %s with N from 1 to %d", w(problem.Trials, "N"), MaxTrials)
		}, nil, "trials is %d; it must be from 1 to %d", opts.Trials, MaxTrials)
	case opts.Trials > 1 && mode != invocation.ModeTest:
		cmd := problem.Setting("kmx " + string(mode))
		return invocation.RefuseIn(func(w problem.Words) string {
			return "use " + problem.Invocation(w, problem.TestCmd, "FILE", w(problem.Trials, "N"))
		}, func(w problem.Words) string {
			return "trials are for " + w(problem.TestCmd, "") + ", not " + w(cmd, "")
		}, "")
	case opts.Trials > 1 && opts.FromRun != "":
		return invocation.RefuseIn(TrialsWithRegradeNext, TrialsWithRegrade, "")
	}
	return nil
}

// judgeSplit says whether any llmJudge assertion's two samples disagreed
// (one at or above its threshold, one below).
func judgeSplit(as []judge.AssertionResult) bool {
	for _, a := range as {
		if a.Type != agentfile.LLMJudge || a.Threshold == nil || len(a.Scores) != 2 || a.Scores[0] == nil || a.Scores[1] == nil {
			continue
		}
		if (*a.Scores[0] >= *a.Threshold) != (*a.Scores[1] >= *a.Threshold) {
			return true
		}
	}
	return false
}

// aggregateTrials folds an example's N trials into one result: pass only
// when all N passed, fail when any failed, otherwise unknown. Mixed
// outcomes are flaky, and the message says so ("flaky 3/5 passed").
func aggregateTrials(trials []ExampleResult) ExampleResult {
	n := len(trials)
	c := TrialCounts{N: n}
	res := ExampleResult{ID: trials[0].ID, Range: trials[0].Range, Journaled: true, Verified: true}
	for _, t := range trials {
		switch t.Verdict {
		case VerdictPass:
			c.Pass++
		case VerdictFail:
			c.Fail++
		default:
			c.Unknown++
		}
		if judgeSplit(t.Assertions) {
			c.JudgeSplits++
		}
		res.Journaled = res.Journaled && t.Journaled
		res.Verified = res.Verified && t.Verified
		res.DurationMs += t.DurationMs
		res.TrialResults = append(res.TrialResults, TrialResult{Verdict: t.Verdict, Message: t.Message, Journaled: t.Journaled, Verified: t.Verified, DurationMs: t.DurationMs, Assertions: t.Assertions, Turns: t.Turns,
			Usage: t.Usage, JudgeUsage: t.JudgeUsage, sessionID: t.sessionID, judgeSessions: t.judgeSessions})
		if t.Usage != nil {
			if res.Usage == nil {
				res.Usage = &Usage{}
			}
			res.Usage.add(t.Usage)
		}
		if t.JudgeUsage != nil {
			if res.JudgeUsage == nil {
				res.JudgeUsage = &Usage{}
			}
			res.JudgeUsage.add(t.JudgeUsage)
		}
	}
	c.Flaky = c.mixed()
	res.Trials = &c
	// The deciding trial: the first failure, else the first non-pass, else
	// the first trial.
	pick := 0
	switch {
	case c.Fail > 0:
		res.Verdict = VerdictFail
		for i, t := range trials {
			if t.Verdict == VerdictFail {
				pick = i
				break
			}
		}
	case c.Pass == n:
		res.Verdict = VerdictPass
	default:
		res.Verdict = VerdictUnknown
		for i, t := range trials {
			if t.Verdict != VerdictPass {
				pick = i
				break
			}
		}
	}
	d := trials[pick]
	res.Assertions, res.Deciding, res.DecidingRange, res.Answer = d.Assertions, d.Deciding, d.DecidingRange, d.Answer
	res.ToolCalls, res.ToolSources = d.ToolCalls, d.ToolSources
	res.Turns = trialTurns(trials)
	// A workspace example shows what its deciding trial changed (the CLI's
	// workspace line and, with --show-content, its diff), as one run does.
	res.Workspace, res.workspace = d.Workspace, d.workspace
	counts := fmt.Sprintf("%d pass, %d fail, %d unknown", c.Pass, c.Fail, c.Unknown)
	if c.JudgeSplits > 0 {
		counts += fmt.Sprintf(", %d with split judge samples", c.JudgeSplits)
	}
	switch {
	case c.Flaky:
		res.Message = fmt.Sprintf("flaky %d/%d passed (%s); trial %d: %s", c.Pass, n, counts, pick+1, d.Message)
	case res.Verdict == VerdictPass:
		res.Message = fmt.Sprintf("all %d trials passed", n)
	default:
		res.Message = fmt.Sprintf("%d/%d trials %s: %s", n, n, res.Verdict, d.Message)
	}
	return res
}

// trialTurns folds a multi-turn example's trials turn by turn (nil for a
// one-turn example): turn n's verdict over the N trials as an example's is
// over its trials (pass only when it passed in every trial, fail when it
// failed in any, not run when no trial reached it, else unknown), its
// counts (NotRun: the trials that never sent it), its usage and duration
// summed over the trials, and a message saying what happened to it in
// each trial. Its assertions are its deciding trial's: the first in which
// it failed, else the first in which it ran and did not pass.
func trialTurns(trials []ExampleResult) []TurnResult {
	n := 0
	for _, t := range trials {
		n = max(n, len(t.Turns))
	}
	if n == 0 {
		return nil
	}
	out := make([]TurnResult, n)
	for i := range out {
		c := TrialCounts{N: len(trials)}
		agg := TurnResult{Turn: i + 1, Journaled: true, Verified: true}
		parts := make([]string, len(trials))
		pick, ran := -1, 0
		for k, t := range trials {
			if i >= len(t.Turns) || t.Turns[i].Verdict == VerdictNotRun {
				c.NotRun++
				why := "not run"
				if i < len(t.Turns) && t.Turns[i].Message != "" {
					why = t.Turns[i].Message
				} else if t.Message != "" {
					why = "not run: " + t.Message
				}
				parts[k] = fmt.Sprintf("trial %d: %s", k+1, why)
				continue
			}
			tr := t.Turns[i]
			if agg.Range == nil {
				agg.Range = tr.Range
			}
			ran++
			switch tr.Verdict {
			case VerdictPass:
				c.Pass++
				parts[k] = fmt.Sprintf("trial %d: pass", k+1)
			case VerdictFail:
				c.Fail++
				if pick < 0 || trials[pick].Turns[i].Verdict != VerdictFail {
					pick = k
				}
			default:
				c.Unknown++
				if pick < 0 {
					pick = k
				}
			}
			if tr.Verdict != VerdictPass {
				parts[k] = fmt.Sprintf("trial %d: %s: %s", k+1, tr.Verdict, tr.Message)
			}
			agg.Journaled = agg.Journaled && tr.Journaled
			agg.Verified = agg.Verified && tr.Verified
			if tr.DurationMs != nil {
				if agg.DurationMs == nil {
					agg.DurationMs = new(float64)
				}
				*agg.DurationMs += *tr.DurationMs
			}
			if tr.Verified {
				if agg.Usage == nil {
					agg.Usage = &Usage{}
				}
				agg.Usage.add(tr.Usage)
			}
		}
		if agg.Range == nil {
			for _, t := range trials {
				if i < len(t.Turns) {
					agg.Range = t.Turns[i].Range
					break
				}
			}
		}
		if ran == 0 {
			agg.Journaled, agg.Verified = false, false
		}
		c.Flaky = c.mixed()
		agg.Trials = &c
		switch {
		case c.Fail > 0:
			agg.Verdict = VerdictFail
		case c.Pass == c.N:
			agg.Verdict = VerdictPass
		case c.NotRun == c.N:
			agg.Verdict = VerdictNotRun
		default:
			agg.Verdict = VerdictUnknown
		}
		if pick >= 0 {
			d := trials[pick].Turns[i]
			agg.Assertions, agg.Deciding, agg.DecidingRange = d.Assertions, d.Deciding, d.DecidingRange
			agg.Answer, agg.ToolCalls, agg.ToolSources, agg.Workspace = d.Answer, d.ToolCalls, d.ToolSources, d.Workspace
		} else if ran > 0 {
			for _, t := range trials {
				if i < len(t.Turns) && t.Turns[i].Verdict == VerdictPass {
					d := t.Turns[i]
					agg.Assertions, agg.Answer, agg.ToolCalls, agg.ToolSources, agg.Workspace = d.Assertions, d.Answer, d.ToolCalls, d.ToolSources, d.Workspace
					break
				}
			}
		}
		counts := fmt.Sprintf("%d pass, %d fail, %d unknown", c.Pass, c.Fail, c.Unknown)
		if c.NotRun > 0 {
			counts += fmt.Sprintf(", %d not run", c.NotRun)
		}
		switch {
		case agg.Verdict == VerdictPass:
			agg.Message = fmt.Sprintf("all %d trials passed", c.N)
		case c.Flaky:
			agg.Message = fmt.Sprintf("flaky %d/%d passed (%s); %s", c.Pass, c.N, counts, strings.Join(parts, "; "))
		case agg.Verdict == VerdictNotRun:
			agg.Message = fmt.Sprintf("not run in any of the %d trials; %s", c.N, strings.Join(parts, "; "))
		default:
			agg.Message = fmt.Sprintf("%d/%d trials passed (%s); %s", c.Pass, c.N, counts, strings.Join(parts, "; "))
		}
		out[i] = agg
	}
	return out
}
