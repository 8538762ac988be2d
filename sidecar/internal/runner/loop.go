package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// VerdictAnswered is the outcome of an ad-hoc Run input whose turn completed
// and replay-verified: it had nothing to check, so it is neither a pass nor a
// failure.
const VerdictAnswered = "answered"

// loop runs the selected examples on a bounded pool of workers (Options.
// Concurrency), handing them out in file order. After an execution failure,
// a deadline, a cancellation or a malformed judge reply, no further example
// is sent: every later one is reported unknown without being sent, and the
// ones in flight are cancelled (unknown, never pass).
type loop struct {
	opts Options
	plan *invocation.Plan
	// regrade is the re-grade's source answers (Options.FromRun), else nil.
	regrade *readback.Regrade
	exec    Executor
	rep     *Report
	// scratch holds the examples' scratch copies of their fixture
	// workspaces (nil: no selected example has one, or a re-grade).
	scratch *scratchArea

	// stop cancels every example in flight; it is called once the run
	// aborts.
	stop context.CancelFunc
	// slots bounds the turns in flight to the concurrency: a worker holds
	// one while it runs an example, and a judge sample that runs beside
	// its example's first sample holds another (judgeSampler).
	slots chan struct{}

	mu      sync.Mutex
	aborted string
	// execFailed: an example failed to execute (not a verdict, a failure).
	execFailed bool
	next       int    // the next job to hand out
	done       []bool // decided, by selection index
	emitted    int    // examples passed to OnExample, in order
	// trials holds each example's trial results until all are in (Options
	// .Trials > 1); left counts the trials still running per example.
	trials [][]ExampleResult
	left   []int
}

// run hands out the selected examples, then the ad-hoc input if any, to
// the workers; rep.Examples holds them in that order.
// words is how the front names settings in what the loop writes into
// results (invocation.Options.Words; nil: the command line's flags).
func (l *loop) words() problem.Words { return l.opts.Wording() }

func (l *loop) run(ctx context.Context) {
	actx, stop := context.WithCancel(ctx)
	defer stop()
	l.stop = stop
	n := len(l.plan.Selected)
	total := n
	if l.plan.AdHoc != nil {
		total++
	}
	l.done = make([]bool, total)
	if l.opts.OnSelected != nil {
		l.opts.OnSelected(total)
	}
	// Jobs are handed out in file order, each example's trials together:
	// job j is trial j%trials of example j/trials. Every trial is a fresh
	// Session, like every example.
	trials := trialsOf(l.opts)
	jobs := n*trials + total - n
	if trials > 1 {
		l.trials = make([][]ExampleResult, n)
		l.left = make([]int, n)
		for i := range l.left {
			l.trials[i] = make([]ExampleResult, trials)
			l.left[i] = trials
		}
	}
	workers := l.opts.Concurrency
	if workers <= 0 {
		workers = invocation.DefaultConcurrency
	}
	if p := l.opts.Pool; p != nil {
		// Shared with the other invocations of a comparison.
		workers, l.slots = p.Size(), p.slots
	} else {
		l.slots = make(chan struct{}, workers)
	}
	var wg sync.WaitGroup
	for range min(workers, jobs) {
		wg.Go(func() {
			for {
				l.slots <- struct{}{}
				l.mu.Lock()
				j := l.next
				l.next++
				l.mu.Unlock()
				if j >= jobs {
					<-l.slots
					return
				}
				l.job(ctx, actx, j, n, trials)
				<-l.slots
			}
		})
	}
	wg.Wait()
}

// job runs job j: trial j%trials of example j/trials, or the ad-hoc input
// after the n examples.
func (l *loop) job(ctx, actx context.Context, j, n, trials int) {
	if j == n*trials {
		l.finish(n, l.runExample(ctx, actx, agentfile.Example{ID: invocation.AdHocID, Input: *l.plan.AdHoc}, true))
		return
	}
	i, k := j/trials, j%trials
	res := l.runExample(ctx, actx, l.plan.Selected[i], false)
	res.Range = l.rep.Examples[i].Range
	if trials == 1 {
		l.finish(i, res)
		return
	}
	if all := l.trialDone(i, k, res); all != nil {
		agg := aggregateTrials(all)
		agg.Range = l.rep.Examples[i].Range
		l.finish(i, agg)
	}
}

// trialDone records trial k of example i and returns all its trials once
// the last one is in, else nil.
func (l *loop) trialDone(i, k int, res ExampleResult) []ExampleResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trials[i][k] = res
	l.left[i]--
	if l.left[i] > 0 {
		return nil
	}
	return l.trials[i]
}

// finish records example i's result, reports it as finished, and passes
// every example decided so far in selection order to OnExample.
func (l *loop) finish(i int, res ExampleResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rep.Examples[i] = res
	l.done[i] = true
	if l.opts.OnFinished != nil {
		l.opts.OnFinished(res)
	}
	for l.emitted < len(l.done) && l.done[l.emitted] {
		l.emit(l.emitted)
		l.emitted++
	}
}

// emit counts example i in the summary and streams it. l.mu is held.
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
	if ex.Usage != nil || ex.JudgeUsage != nil {
		if l.rep.Usage == nil {
			l.rep.Usage = &UsageReport{}
		}
		if ex.Usage != nil {
			l.rep.Usage.Agent.add(ex.Usage)
		}
		if ex.JudgeUsage != nil {
			l.rep.Usage.Judge.add(ex.JudgeUsage)
		}
	}
	if l.opts.OnExample != nil {
		l.opts.OnExample(ex)
	}
}

// abort stops the run: the first reason is kept, nothing more is sent and
// the examples in flight are cancelled.
func (l *loop) abort(why string, execFailed bool) {
	l.mu.Lock()
	if l.aborted == "" {
		l.aborted = why
	}
	if execFailed {
		l.execFailed = true
	}
	l.mu.Unlock()
	l.stop()
}

// abortReason is why the run stopped, or "" while it runs. A cancelled
// caller context stops it too.
func (l *loop) abortReason(ctx context.Context) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.aborted == "" && ctx.Err() != nil {
		l.aborted = "cancelled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			l.aborted = BoundExpired(l.opts.InvocationBound, l.words())
		}
	}
	return l.aborted
}

// runExample runs one example (or the ad-hoc input) and decides its
// verdict. ctx is the invocation's context (the caller's cancellation and
// the invocation bound); actx is ctx plus the run's own abort, which cancels
// the examples in flight.
func (l *loop) runExample(ctx, actx context.Context, ex agentfile.Example, adHoc bool) (res ExampleResult) {
	start := time.Now()
	res = ExampleResult{ID: ex.ID, AdHoc: adHoc, Verdict: VerdictUnknown}
	// res is the named result, so the duration reaches the caller.
	defer func() { res.DurationMs = ms(time.Since(start)) }()
	if why := notRegraded(l.regrade, ex.ID); why != "" {
		// A re-grade never sends an agent turn: an example it cannot
		// answer from the source run is refused, and says what to run.
		res.Verdict, res.Message = VerdictRefused, why
		return res
	}
	if why := l.abortReason(ctx); why != "" {
		res.Message = "not sent: " + why
		return res
	}
	if !ex.MultiTurn() {
		var ws *sessionspb.WorkspaceRef
		if !adHoc {
			var done func(*ExampleResult)
			var err error
			if ws, done, err = l.openScratch(ex); err != nil {
				res.Message = "execution failed: " + err.Error()
				return res
			}
			if done != nil {
				defer done(&res)
			}
		}
		one, _ := l.runTurn(ctx, actx, ex, ex.ID, agentfile.Turn{Input: ex.Input, Assertions: ex.Assertions}, nil, ws, adHoc)
		one.ID, one.AdHoc, one.DurationMs = res.ID, res.AdHoc, res.DurationMs
		if one.Journaled && one.Verified || one.Usage != nil {
			u := one.Usage
			one.Usage = &Usage{}
			one.Usage.add(u)
		}
		res = one
		return res
	}
	ws, done, err := l.openScratch(ex)
	if err != nil {
		res.Message = "execution failed: " + err.Error()
		for i, turn := range ex.Turns {
			r := turn.Range
			res.Turns = append(res.Turns, TurnResult{Turn: i + 1, Range: &r, Verdict: VerdictNotRun, Message: "not sent: the workspace could not be copied"})
		}
		return res
	}
	if done != nil {
		defer done(&res)
	}
	res = l.runScript(ctx, actx, ex, res, ws)
	return res
}

// openScratch copies example ex's fixture workspace, when it has one and
// the run sends turns (not a re-grade): one copy per example (per trial),
// which every turn of a multi-turn example works on in order, so that a
// turn sees the files as the earlier turns left them. done ends the
// copy's use once the example has ended, whatever ended it: it is
// unregistered, then removed, or kept (--keep-workspace, named in the
// result); a copy that cannot be removed leaves no pass. ws and done are
// nil for an example without a workspace. A copy that cannot be made
// aborts the run.
func (l *loop) openScratch(ex agentfile.Example) (ws *sessionspb.WorkspaceRef, done func(*ExampleResult), err error) {
	fx := l.plan.Workspace(ex.ID)
	if fx == nil || l.scratch == nil {
		return nil, nil, nil
	}
	w, ref, err := l.scratch.open(fx, nil)
	if err != nil {
		l.abort("an earlier example's workspace could not be copied", true)
		return nil, nil, err
	}
	return ref, func(res *ExampleResult) {
		kept, err := l.scratch.done(w, ref)
		res.KeptWorkspace = kept
		if err != nil && res.Verdict == VerdictPass {
			res.Verdict, res.Message = VerdictUnknown, "the scratch workspace could not be removed: "+err.Error()
		}
	}, nil
}

// runScript runs a multi-turn example's turns in order, as one
// conversation: each turn is a fresh Session in the run's journal, sent
// with the earlier turns' inputs and (verified) answers as its history.
// A turn that does not pass stops the script: the later turns are not
// run, and the example passes only when every turn passed.
//
// An example with a workspace runs every turn in the one scratch copy ws:
// each turn's journaled outcome is the copy's state after that turn,
// relative to the fixture (so cumulative over the turns so far), and the
// example's workspace summary and diff are the last sent turn's.
func (l *loop) runScript(ctx, actx context.Context, ex agentfile.Example, res ExampleResult, ws *sessionspb.WorkspaceRef) ExampleResult {
	res.Journaled, res.Verified = true, true
	res.Usage = &Usage{}
	var history []journal.HistoryMessage
	stop := ""
	deciding := -1
	for i, turn := range ex.Turns {
		r := turn.Range
		tr := TurnResult{Turn: i + 1, Range: &r}
		if stop != "" {
			tr.Verdict, tr.Message = VerdictNotRun, "not run: "+stop
			res.Turns = append(res.Turns, tr)
			continue
		}
		if why := l.abortReason(ctx); why != "" {
			tr.Verdict, tr.Message = VerdictNotRun, "not sent: "+why
			res.Journaled, res.Verified = false, false
			stop = why
			if deciding < 0 {
				deciding = i
			}
			res.Turns = append(res.Turns, tr)
			continue
		}
		if why := unanswered(l.regrade, agentfile.TurnName(ex.ID, i+1)); why != "" {
			// A re-grade whose source stopped before this turn: the
			// turns before it passed now, and this one has no answer to
			// judge. Unknown, never sent.
			tr.Verdict, tr.Message = VerdictUnknown, why
			res.Journaled, res.Verified = false, false
			stop, deciding = fmt.Sprintf("turn %d was not re-graded", i+1), i
			res.Turns = append(res.Turns, tr)
			continue
		}
		one, out := l.runTurn(ctx, actx, ex, agentfile.TurnName(ex.ID, i+1), turn, history, ws, false)
		tr.Verdict, tr.Message = one.Verdict, one.Message
		tr.Workspace = one.Workspace
		if one.Workspace != nil {
			res.Workspace, res.workspace = one.Workspace, one.workspace
		}
		tr.Journaled, tr.Verified = one.Journaled, one.Verified
		tr.Assertions, tr.Deciding, tr.DecidingRange = one.Assertions, one.Deciding, one.DecidingRange
		tr.Answer, tr.ToolCalls, tr.ToolSources, tr.sessionID = one.Answer, one.ToolCalls, one.ToolSources, one.sessionID
		tr.judgeSessions = one.judgeSessions
		if one.Verified {
			tr.DurationMs, tr.Usage = out.DurationMs, one.Usage
			res.Usage.add(one.Usage)
			res.ToolCalls += one.ToolCalls
			res.ToolSources = mergeSources(res.ToolSources, one.ToolSources)
		}
		if one.JudgeUsage != nil {
			if res.JudgeUsage == nil {
				res.JudgeUsage = &Usage{}
			}
			res.JudgeUsage.add(one.JudgeUsage)
		}
		res.Journaled = res.Journaled && one.Journaled
		res.Verified = res.Verified && one.Verified
		if res.sessionID == "" {
			res.sessionID = one.sessionID
		}
		res.Turns = append(res.Turns, tr)
		if one.Verdict != VerdictPass {
			stop = fmt.Sprintf("turn %d did not pass", i+1)
			deciding = i
			continue
		}
		history = append(history, journal.Exchange(turn.Input, out.Answer)...)
	}
	n := len(ex.Turns)
	if deciding < 0 {
		res.Verdict = VerdictPass
		res.Message = fmt.Sprintf("all %d turns passed", n)
		if !res.Journaled || !res.Verified {
			// Never reached (a turn passes only verified): kept so that
			// "never pass unverified" holds here on its own.
			res.Verdict, res.Message = VerdictUnknown, "not every turn is a journaled, replay-verified turn"
		}
		return res
	}
	d := res.Turns[deciding]
	res.Verdict = VerdictUnknown
	if d.Verdict == VerdictFail {
		res.Verdict = VerdictFail
	}
	res.Message = fmt.Sprintf("turn %d of %d: %s", deciding+1, n, d.Message)
	if notRun := n - deciding - 1; notRun > 0 {
		res.Message += fmt.Sprintf("; %d later turn(s) not run", notRun)
	}
	res.Assertions, res.Deciding, res.DecidingRange = d.Assertions, d.Deciding, d.DecidingRange
	return res
}

// turnWorkspace is the example's scratch copy ws as one turn is placed on
// it: the same copy, with the paths this turn's content assertions name
// (nil without a workspace).
func turnWorkspace(ws *sessionspb.WorkspaceRef, turn agentfile.Turn) *sessionspb.WorkspaceRef {
	if ws == nil {
		return nil
	}
	return &sessionspb.WorkspaceRef{Key: ws.GetKey(), Fixture: ws.GetFixture(), Hash: ws.GetHash(), Paths: invocation.AssertedPaths(turn.Assertions)}
}

// mergeSources adds the tool sources of one turn to an example's, each
// pair once.
func mergeSources(have, add []ToolSource) []ToolSource {
	for _, s := range add {
		if !slices.Contains(have, s) {
			have = append(have, s)
		}
	}
	return have
}

// runTurn runs one turn (a one-turn example's, the ad-hoc input's, or one
// of a multi-turn example's, named name) and decides its verdict from its
// own answer and trace. It returns the turn's result in an ExampleResult
// (without ID or duration) and the executor's outcome.
func (l *loop) runTurn(ctx, actx context.Context, ex agentfile.Example, name string, turn agentfile.Turn, history []journal.HistoryMessage, ws *sessionspb.WorkspaceRef, adHoc bool) (res ExampleResult, out Outcome) {
	res.Verdict = VerdictUnknown
	deadline := l.opts.ExampleDeadline
	if deadline <= 0 {
		deadline = DefaultExampleDeadline
	}
	ectx, cancel := context.WithTimeout(actx, deadline)
	defer cancel()

	out, err := l.exec.Execute(ectx, Turn{
		Purpose:      invocation.PurposeAgent,
		ExampleID:    name,
		Instructions: l.plan.Agent.Instructions,
		Input:        turn.Input,
		Model:        l.plan.Routes.Agent,
		Tools:        l.plan.Tools(ex.ID),
		Workspace:    turnWorkspace(ws, turn),
		History:      history,
	})
	res.Journaled = out.Journaled
	res.Verified = out.Journaled && out.Verified
	res.sessionID = out.SessionID
	if err != nil {
		res.Verified = false
		if actx.Err() != nil {
			// Stopped by the caller or by another example's failure: not
			// a failure of this example.
			res.Message = "cancelled: " + l.abortReason(ctx)
			return res, out
		}
		if expired(ectx) {
			// The example's own deadline cut the call (it may surface as
			// the stream's error rather than a cancelled outcome): say so,
			// as turnProblem does.
			l.abort(exampleName(ex.ID, adHoc)+" exceeded its deadline", false)
			res.Message = fmt.Sprintf("the example deadline (%s) expired", deadline)
			return res, out
		}
		l.abort(exampleName(ex.ID, adHoc)+" failed to execute", true)
		res.Message = "execution failed: " + problem.Message(err)
		return res, out
	}
	if l.opts.ShowContent && out.Completed {
		answer := out.Answer
		res.Answer = &answer
	}
	if trouble := l.turnProblem(ctx, actx, ectx, out, deadline, exampleName(ex.ID, adHoc)); trouble != "" {
		res.Verified = false
		res.Message = trouble
		return res, out
	}
	why := ""
	if res.Verified && !adHoc && l.plan.Routes.Agent.Route == route.Fake && out.Answer == route.FakeGuidance {
		// The fake's placeholder answers any instructions without a
		// directive: an assertion it passes (notContains, toolNotCalled,
		// a rubric) proves nothing, so no assertion is checked or judged.
		recordToolUses(&res, out.ToolUses)
		res.Usage = out.Usage
		res.Verdict, res.Message = VerdictUnknown, route.FakePlaceholderUnknown(l.words())
		return res, out
	}
	if res.Verified {
		out.ToolUses = namedUses(out.ToolUses, l.plan.Tools(ex.ID))
		recordToolUses(&res, out.ToolUses)
		res.Usage = out.Usage
		if !adHoc {
			why = l.checkAssertions(ctx, actx, ectx, &res, ex.ID, name, turn, out)
		}
	} else if res.Journaled {
		l.abort("the turn of "+exampleName(ex.ID, adHoc)+" failed replay verification", false)
	}
	res.Verdict, res.Message = l.verdict(ctx, actx, ectx, res, out, len(turn.Assertions), adHoc, why)
	l.decide(&res, turn.Assertions)
	return res, out
}

// checkAssertions checks a turn's assertions against its verified outcome,
// in order, into res.Assertions: the answer's with the answer, the
// trajectory assertions with the replay-verified tool trace, the budgets
// with the journaled measures. It stops at the first assertion whose judge
// was malformed or unavailable (aborting the run) and returns why; a
// result with fewer assertions than the turn has cannot pass.
func (l *loop) checkAssertions(ctx, actx, ectx context.Context, res *ExampleResult, exampleID, name string, turn agentfile.Turn, out Outcome) string {
	sampler := &judgeSampler{exec: l.exec, routes: l.plan.Routes, example: name, slots: l.slots}
	defer func() { res.JudgeUsage, res.judgeSessions = sampler.usage, sampler.sessions }()
	if len(turn.Assertions) > 0 {
		// Sized once: the results stay in the report until the run ends.
		res.Assertions = make([]judge.AssertionResult, 0, len(turn.Assertions))
	}
	var outcome *workspace.Outcome
	if len(out.WorkspaceOutcome) > 0 {
		// A one-turn example's, or one turn's of a multi-turn example: the
		// copy after this turn, relative to the fixture.
		outcome = judge.DecodeOutcome(out.WorkspaceOutcome)
		res.workspace = outcome
		res.Workspace = workspaceSummary(l.plan.WorkspaceDir(exampleID), outcome)
	}
	for _, a := range turn.Assertions {
		var r judge.AssertionResult
		switch {
		case judge.IsFileAssertion(a.Type):
			// From the replay-verified turn's journaled outcome only.
			r = judge.EvaluateFile(a, outcome)
		case a.Type.IsTrajectory():
			// From the replay-verified trace only (prepare refused them
			// on a file that declares no tools).
			r = judge.EvaluateTool(a, out.ToolUses)
		case a.Type.IsBudget():
			var m judge.Measures
			m.DurationMs = out.DurationMs
			if out.Usage != nil {
				total := out.Usage.TotalTokens
				m.TotalTokens = &total
			}
			r = judge.EvaluateBudget(a, m)
		default:
			r = judge.Evaluate(ectx, a, turn.Input, out.Answer, sampler)
			if a.Type == agentfile.LLMJudge && r.Outcome == judge.Unknown && !r.Abort && unscored(r.Scores) && l.fakeJudge(a.Operands().JudgeModel) {
				r.Message = judge.FakeUnscorable
			}
		}
		res.Assertions = append(res.Assertions, r)
		if r.Abort {
			if actx.Err() != nil {
				return l.abortReason(ctx)
			}
			l.abort("the judge reply for "+exampleName(name, false)+" was malformed or unavailable", false)
			return "its judge reply was malformed or unavailable"
		}
	}
	return ""
}

// fakeJudge reports whether the judge of an llmJudge naming judgeModel is
// the fake judge.
func (l *loop) fakeJudge(judgeModel string) bool {
	id, ok := l.plan.Routes.JudgeIdentity(judgeModel)
	return ok && id.Route == route.Fake
}

// unscored reports whether every judge sample came back without a score.
func unscored(scores []*int) bool {
	for _, s := range scores {
		if s != nil {
			return false
		}
	}
	return len(scores) > 0
}

// verdict is the one place that decides an example's verdict once its turn
// has ended, and so the one place that keeps "never pass unverified": a pass
// stands only for a turn that is journaled and replay-verified (the
// Executor's Outcome, read back from the journal), with every assertion
// checked, judged before the example's deadline and before the run aborted.
// Anything less is unknown, with the reason. A fail stays a fail: it needs
// no verification to be worth showing. unchecked says why assertions were
// left unchecked, if they were.
func (l *loop) verdict(ctx, actx, ectx context.Context, res ExampleResult, out Outcome, asserts int, adHoc bool, unchecked string) (string, string) {
	switch {
	case !res.Journaled:
		return VerdictUnknown, "not journaled: a result that is not journaled and replay-verified cannot pass"
	case !res.Verified:
		if out.Problem == "" {
			return VerdictUnknown, "not a journaled, replay-verified turn"
		}
		return VerdictUnknown, out.Problem
	case adHoc:
		return VerdictAnswered, "answered; ad-hoc input has no assertions"
	case len(res.Assertions) < asserts:
		// Assertions after an abort were not checked: the example cannot
		// pass, whatever the ones before said.
		return VerdictUnknown, "not all assertions were checked: " + unchecked
	}
	v := judge.Verdict(res.Assertions)
	if v.Outcome == judge.Pass && ectx.Err() != nil {
		if actx.Err() != nil {
			return VerdictUnknown, "cancelled while judging: " + l.abortReason(ctx)
		}
		return VerdictUnknown, "the example deadline expired while judging"
	}
	return string(v.Outcome), v.Message
}

// turnProblem says why a turn that ended could not be judged at all
// (cancelled, past its deadline, incomplete), or "". Whether a completed turn
// may pass is verdict's decision.
// name is the example's name in the reason it stops the run with.
func (l *loop) turnProblem(ctx, actx, ectx context.Context, out Outcome, deadline time.Duration, name string) string {
	switch {
	case !out.Completed && !out.Cancelled && out.Problem != "":
		// The turn failed on its own (a refused connection fails every
		// example in flight at once): its own reason, even when another
		// example's failure stopped the run first.
		l.abort(name+" failed to execute", false)
		return out.Problem
	case out.Cancelled && ctx.Err() != nil:
		return l.abortReason(ctx)
	case out.Cancelled && actx.Err() != nil:
		return "cancelled: " + l.abortReason(ctx)
	case out.Cancelled && expired(ectx):
		l.abort(name+" exceeded its deadline", false)
		return fmt.Sprintf("the example deadline (%s) expired", deadline)
	case !out.Completed:
		if actx.Err() != nil {
			return "cancelled: " + l.abortReason(ctx)
		}
		l.abort(name+" failed to execute", false)
		return "the turn did not complete"
	}
	return ""
}

// exampleName names example id (or the ad-hoc input) in the reason a run
// stopped ("example a failed to execute"): with several in flight, the one
// that stopped the run may come later in the file than the ones it stopped,
// so "an earlier example" would be wrong.
func exampleName(id string, adHoc bool) string {
	if adHoc {
		return "the ad-hoc input"
	}
	return "example " + id
}

// expired reports whether the example's context has ended or its deadline
// has passed. The deadline shows in ectx.Err() only once its timer's
// callback has run; under load the copies of the same deadline that
// Sessions and the harness hold (never earlier) can cut the turn first.
func expired(ectx context.Context) bool {
	if ectx.Err() != nil {
		return true
	}
	d, ok := ectx.Deadline()
	return ok && !time.Now().Before(d)
}

// decide points at the assertion that decided a fail or unknown verdict.
func (l *loop) decide(res *ExampleResult, asserts []agentfile.Assertion) {
	want := judge.Outcome(res.Verdict)
	if res.Verdict != VerdictFail && res.Verdict != VerdictUnknown {
		return
	}
	for i, a := range res.Assertions {
		if a.Outcome == want {
			idx := i
			res.Deciding = &idx
			if i < len(asserts) {
				r := asserts[i].Range
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

// judgeSampler runs each judge sample as its own turn on the executor, on
// the run's pool: the first sample of an assertion runs in its example's
// slot; a later one runs beside it in a slot no worker holds, or after it
// in its place when there is none. So a run never has more than
// Options.Concurrency turns in flight, and at concurrency 1 the samples go
// one after the other, in order, as they always did.
type judgeSampler struct {
	exec    Executor
	routes  *invocation.Routes
	example string
	// mu guards usage, the judge's token usage over the samples sent, and
	// sessions, the samples' journal sessions (placed ones, whatever
	// their outcome).
	mu       sync.Mutex
	usage    *Usage
	sessions []string
	// slots is the run's pool (see loop.slots); nil runs every sample in
	// turn.
	slots chan struct{}
}

var _ judge.Sampler = (*judgeSampler)(nil)

// Sample runs one judge sample in a fresh tool-free Session in the same
// journal. Only a completed, replay-verified sample is returned.
func (s *judgeSampler) Sample(ctx context.Context, prev <-chan struct{}, judgeModel, instructions, input string) (string, error) {
	id, ok := s.routes.JudgeIdentity(judgeModel)
	if !ok {
		return "", fmt.Errorf("no judge route for model %q", judgeModel)
	}
	if err := s.routes.JudgeOffline(judgeModel); err != nil {
		return "", err
	}
	if prev != nil {
		select {
		case s.slots <- struct{}{}: // a free slot: run beside the earlier sample
			defer func() { <-s.slots }()
		case <-prev: // the earlier sample ended: run in its place
		case <-ctx.Done():
		}
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("not sent: %w", err)
		}
	}
	out, err := s.exec.Execute(ctx, Turn{Purpose: invocation.PurposeJudge, ExampleID: s.example, Instructions: instructions, Input: input, Model: id})
	if out.SessionID != "" {
		s.mu.Lock()
		s.sessions = append(s.sessions, out.SessionID)
		s.mu.Unlock()
	}
	if err != nil {
		return "", err
	}
	switch {
	case out.Cancelled:
		return "", errors.New("cancelled")
	case !out.Completed:
		return "", errors.New(out.Problem)
	case !out.Journaled || !out.Verified:
		return "", errors.New("not a journaled, replay-verified turn")
	}
	s.mu.Lock()
	if s.usage == nil {
		s.usage = &Usage{}
	}
	s.usage.add(out.Usage)
	s.mu.Unlock()
	return out.Answer, nil
}
