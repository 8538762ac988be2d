package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/english"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/sessions"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/state"
	"github.com/kmxdev/kmx/sidecar/internal/version"
)

// Bounds that apply unless Options says otherwise.
const (
	DefaultExampleDeadline = 2 * time.Minute
	DefaultInvocationBound = 5 * time.Minute
)

// Options configure one invocation: the plan's options (state folder,
// routes, tool binding, concurrency) and how the examples run.
type Options struct {
	invocation.Options

	ExampleDeadline time.Duration
	InvocationBound time.Duration
	// Trials runs each example this many times (1 to MaxTrials; 0 is 1),
	// each in a fresh Session of the one journal. Test only.
	Trials int
	// FromRun re-grades: the answers come from this retained run's journal
	// (replayed with zero agent model calls), and only the assertions are
	// evaluated again. Test only.
	FromRun string

	// ShowContent includes answers in the report. Run sets it.
	ShowContent bool
	// KeepWorkspace keeps each example's scratch copy of its fixture
	// workspace after the run (--keep-workspace); the report names it.
	// Otherwise a copy is removed once its example's turn has ended,
	// whatever the outcome.
	KeepWorkspace bool
	// OnExample, when set, receives each example's result in selection
	// order, as soon as it and every example before it are decided (for
	// streaming output).
	OnExample func(ExampleResult)
	// OnFinished, when set, receives each example's result as soon as it is
	// decided, in the order examples finish (for progress counts). Neither
	// callback is ever called concurrently with itself or the other.
	OnFinished func(ExampleResult)
	// OnSelected, when set, is called once before the first example is
	// sent, with how many results OnFinished will receive: the examples
	// selected (and the ad-hoc input), each counted once whatever its
	// trials. A refused invocation never calls it.
	OnSelected func(total int)
	// NewExecutor replaces the journaled Sessions executor (tests only). The
	// returned executor's results are reported with its own Journaled flag;
	// a re-grade needs the Sessions executor and is refused with it.
	NewExecutor func(j *journal.Journal, p *invocation.Plan) (Executor, func(), error)
	// Comparison, when set, is recorded in the run's result: the run is
	// one column of a comparison (kmx journal diff RUN finds the others).
	Comparison *journal.ResultComparison
	// Pool, when set, is shared with other invocations running at the same
	// time (a comparison's models and baseline): its slots bound the turns
	// in flight of them all, instead of Concurrency bounding this one's.
	Pool *Pool
	// HoldRuns, when set, keeps this invocation's run executing (for
	// retention) after its journal is final, until the holder is released:
	// a command over several files passes one holder to every file, so
	// none of its runs is deleted before it ends.
	HoldRuns *RunHolder
	// CaptureAsEdit returns a capture as an edit (Report.Capture.Edits)
	// instead of writing the file: the editor applies it as one undoable
	// WorkspaceEdit. The CLI and MCP leave it false and the file is edited.
	CaptureAsEdit bool
}

// Run executes the selected examples (or the ad-hoc input) and shows each
// answer; assertions are checked too, so a Run of an example has a verdict.
func Run(ctx context.Context, opts Options, req invocation.Request) (*Report, error) {
	opts.ShowContent = true
	return invoke(ctx, invocation.ModeRun, opts, req)
}

// Test executes the selected examples and judges them.
func Test(ctx context.Context, opts Options, req invocation.Request) (*Report, error) {
	if req.Input != nil {
		return nil, invocation.RefuseIn(func(w problem.Words) string {
			return "use " + problem.Invocation(w, problem.RunCmd, "FILE", w(problem.Input, "TEXT")) + " to try an input; " + w(problem.TestCmd, "") + " runs the file's examples"
		}, nil, "ad-hoc input is for Run, not Test")
	}
	return invoke(ctx, invocation.ModeTest, opts, req)
}

func invoke(ctx context.Context, mode invocation.Mode, opts Options, req invocation.Request) (*Report, error) {
	start := time.Now()
	rep := &Report{Schema: ReportSchema, Label: Label, Command: string(mode), Agent: AgentRef{Path: req.Path}, Selection: "full", Examples: []ExampleResult{}}
	if err := checkTrials(opts, mode); err != nil {
		return refusedReport(rep, err, start, opts.Wording()), err
	}
	opts.Options.Regrade = opts.FromRun != ""
	plan, err := invocation.Prepare(ctx, opts.Options, req)
	if plan != nil {
		describe(rep, plan)
	}
	if err != nil {
		return refusedReport(rep, err, start, opts.Wording()), err
	}
	if err := execute(ctx, mode, opts, plan, rep); err != nil {
		return refusedReport(rep, err, start, opts.Wording()), err
	}
	rep.DurationMs = ms(time.Since(start))
	return rep, nil
}

// refusedReport marks a report as refused when err is a Refusal, its
// message and next step in w's words (other errors keep whatever the
// report had; they are reported by the caller).
func refusedReport(rep *Report, err error, start time.Time, w problem.Words) *Report {
	r, ok := invocation.AsRefusal(err)
	if !ok {
		return rep
	}
	rep.Verdict = VerdictRefused
	msg := r.MessageIn(w)
	rep.Refusal = &RefusalReport{Message: msg, Next: r.NextStepIn(w), Diagnostics: r.Diagnostics}
	for i := range rep.Examples {
		rep.Examples[i].Verdict = VerdictRefused
		rep.Examples[i].Message = msg
	}
	rep.Summary = Summary{Refused: len(rep.Examples)}
	rep.DurationMs = ms(time.Since(start))
	return rep
}

// describe fills the report with what the plan decided: the agent file,
// the selected examples (and the ad-hoc input) in order and, once the plan
// is complete, the routes. A plan refused because its content holds a
// resolved credential has every identifier that holds it withheld.
func describe(rep *Report, plan *invocation.Plan) {
	rep.Agent.Path = plan.Path
	rep.Agent.ExamplesPath = plan.ExamplesPath
	if a := plan.Agent; a != nil {
		rep.Agent.ID, rep.Agent.Name, rep.Agent.Revision = a.ID, a.Name, a.Revision
	}
	if plan.Subset {
		rep.Selection = "subset"
	}
	rep.Examples = slices.Grow(rep.Examples, len(plan.Selected)+1)
	for _, ex := range plan.Selected {
		r := ex.Range
		rep.Examples = append(rep.Examples, ExampleResult{ID: ex.ID, Range: &r})
	}
	if plan.AdHoc != nil {
		rep.Examples = append(rep.Examples, ExampleResult{ID: invocation.AdHocID, AdHoc: true})
	}
	for _, p := range []*string{&rep.Agent.Path, &rep.Agent.ExamplesPath, &rep.Agent.ID, &rep.Agent.Name, &rep.Agent.Revision} {
		if plan.HoldsCredential(*p) {
			*p = withheld
		}
	}
	for i := range rep.Examples {
		if plan.HoldsCredential(rep.Examples[i].ID) {
			rep.Examples[i].ID = withheld
		}
	}
	if rt := plan.Routes; rt != nil {
		rep.Route.Agent = Identity{Route: rt.Agent.Route, Model: rt.Agent.Model}
		if rt.Judge != nil {
			rep.Route.Judge = &Identity{Route: rt.Judge.Route, Model: rt.Judge.Model}
		}
	}
}

// withheld replaces an identifier that holds a credential in a refused
// report.
const withheld = "(withheld: holds the endpoint credential)"

// CommandBaseline is the journaled command of a comparison's baseline
// (kmx test --baseline): a Test of the file's examples on other
// instructions.
const CommandBaseline = "baseline"

// BoundExpired says that the invocation bound (bound; 0 is the default)
// cut the run, and the ways out in w's words: fewer examples per
// invocation, or more of them at once.
func BoundExpired(bound time.Duration, w problem.Words) string {
	fewer := w(problem.Example, "ID")
	if shard := w(problem.Shard, "K/N"); shard != "" {
		fewer += ", or " + shard + " over a folder"
	}
	return fmt.Sprintf("the invocation bound (%s: one kmx invocation runs at most that long) expired; "+
		"test fewer examples per invocation (%s) or more at once (%s)", BoundText(bound), fewer, w(problem.Concurrency, "N"))
}

// BoundText is the invocation bound as a user reads it: "5 minutes".
func BoundText(bound time.Duration) string {
	if bound <= 0 {
		bound = DefaultInvocationBound
	}
	if bound%time.Minute == 0 {
		return english.Plural(int(bound/time.Minute), "minute")
	}
	return bound.String()
}

// execute opens the journal, runs every selected example and fills rep.
func execute(ctx context.Context, mode invocation.Mode, opts Options, plan *invocation.Plan, rep *Report) error {
	bound := opts.InvocationBound
	if bound <= 0 {
		bound = DefaultInvocationBound
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()

	root, err := stateRoot(opts)
	if err != nil {
		return err
	}
	dir, err := journalDir(root)
	if err != nil {
		return err
	}
	if opts.Version == "" {
		opts.Version = version.Version
	}
	var rg *readback.Regrade
	if opts.FromRun != "" {
		// The source is read whole (and replayed with zero calls) before
		// this run's journal exists: a bad source refuses the re-grade,
		// and retention cannot remove it from under us.
		if rg, err = readback.PlanRegrade(ctx, dir, plan, opts.FromRun, opts.Wording()); err != nil {
			return err
		}
	}
	command := string(mode)
	if plan.Baseline != nil {
		// Journaled as what it is: a baseline is never the file's last
		// test run (the editor's re-grade lens skips it, and a re-grade
		// refuses it as a source).
		command = CommandBaseline
	}
	j, err := journal.Create(ctx, dir, journal.RunMeta{
		KmxVersion:    opts.Version,
		AgentID:       plan.Agent.ID,
		AgentRevision: plan.Agent.Revision,
		AgentPath:     journal.PathKey(plan.Path),
		Command:       command,
		Label:         Label,
	})
	if err != nil {
		var unsafe *state.UnsafeError
		if errors.As(err, &unsafe) {
			return &invocation.Refusal{Msg: unsafe.Error(), Next: unsafe.NextStep()}
		}
		return fmt.Errorf("create journal: %w", err)
	}
	// Execution provenance: the settings this run froze (a refusal before
	// this point has none).
	rep.ToolSettings = plan.ToolSettings()
	rep.Tools = summarizeTools(plan)
	rep.Agent.SettingsRevision = plan.SettingsRevision()
	// Retention runs while this run's lock is held, so the run is never its
	// own candidate. Its errors are ignored on purpose: cleaning up older
	// runs is not part of this run's result, the next start tries again,
	// and kmx journal list shows what is left.
	_, _ = journal.Retain(dir, journal.KeepRuns)
	// Scratch copies a killed run left (it never removed them) go the
	// same way, never an executing run's: ignored errors, for the same
	// reasons.
	_ = removeAbandonedScratch(root, dir)

	var scratch *scratchArea
	if plan.HasWorkspaces() && opts.FromRun == "" {
		if scratch, err = newScratchArea(root, j.ID(), opts.KeepWorkspace); err != nil {
			_ = j.Finish(context.WithoutCancel(ctx), journal.StatusFailed)
			return err
		}
	}
	exec, client, stop, err := newExecutor(ctx, opts, j, plan, scratch)
	if err != nil {
		_ = j.Finish(context.WithoutCancel(ctx), journal.StatusFailed)
		return err
	}
	counter := &countingExecutor{next: exec}
	var top Executor = counter
	var rx *regradeExecutor
	if rg != nil {
		if client == nil {
			stop()
			_ = j.Finish(context.WithoutCancel(ctx), journal.StatusFailed)
			return errors.New("a re-grade needs the journaled Sessions executor")
		}
		rx = &regradeExecutor{rg: rg, plan: plan, j: j, client: client, next: counter}
		top = rx
	}
	l := &loop{opts: opts, plan: plan, regrade: rg, exec: top, rep: rep, scratch: scratch}
	l.run(ctx)
	stop()
	scratch.close()
	// The examples are done: what they held in flight is garbage, and the
	// heap holds every result. Collecting it now lets the run.result record
	// and the journal's final checkpoint reuse that memory rather than grow
	// the heap at the run's peak (about 1 MiB less peak RSS at 2,000
	// examples, for one collection of a few milliseconds).
	runtime.GC()
	if rx != nil {
		rep.Regrade = &RegradeReport{SourceRun: rg.Source, AgentCalls: int(counter.agent.Load()), JudgeCalls: int(counter.judge.Load()),
			ReusedJudgeSamples: int(rx.reused.Load()), Replayed: int(rx.replay.Load()), NotRegraded: len(rg.Refused)}
	}
	if n := trialsOf(opts); n > 1 {
		rep.Trials = n
	}
	if mode == invocation.ModeTest {
		// A result that cannot be recorded leaves the run without verdicts
		// in its journal (kmx journal diff then says so); it does not
		// change them.
		res := journal.RunResult{SourceRun: opts.FromRun, Trials: trialsOf(opts), AgentCalls: int(counter.agent.Load()), JudgeCalls: int(counter.judge.Load())}
		if b := plan.Baseline; b != nil {
			res.Baseline = &journal.ResultBaseline{Rev: b.Rev, Commit: b.Commit, Path: b.Path}
		}
		res.Comparison = opts.Comparison
		_ = writeResult(ctx, j, plan, rep, res)
	}

	status := journal.StatusFinished
	if ctx.Err() != nil {
		status = journal.StatusCancelled
	}
	if err := finishJournal(context.WithoutCancel(ctx), j, status, opts.HoldRuns); err != nil {
		// A journal that did not finalize cannot back a pass.
		l.demote("the journal could not be finalized")
		return err // the journal's error names it: "finish journal ID: …"
	}
	// The run's identity is exposed only once its journal is final: a
	// report never points at a journal that could still change or vanish.
	rep.RunID = j.ID()
	rep.JournalPath = j.Path()
	rep.Journaled = l.journaled()
	rep.Verdict = fileVerdict(rep.Examples)
	rep.Stubbed = stubbedOf(rep.Examples)
	// Run, a passing Test, a baseline, cancellation and execution failure
	// keep no failure record: Explain is about the file as it is.
	if mode == invocation.ModeTest && plan.Baseline == nil && rep.Verdict != VerdictPass && status == journal.StatusFinished && !l.execFailed {
		rep.Retention = retain(root, plan, rep)
	}
	// A pending recording a live call answered is captured only now, from
	// the finalized journal. A capture that was due and not saved
	// withholds full success: the file verdict is then not a pass.
	// A baseline's answers never go into the current file.
	if status == journal.StatusFinished && plan.Baseline == nil {
		rep.Capture = capture(ctx, opts, plan, rep, dir)
		if c := rep.Capture; c != nil && (c.Status == CaptureRefused || c.Status == CaptureFailed) && rep.Verdict == VerdictPass {
			rep.Verdict = VerdictUnknown
		}
	}
	return nil
}

// stateRoot is StateRoot with a failure as the runner's refusal.
func stateRoot(opts Options) (string, error) {
	root, err := invocation.StateRoot(opts.Options)
	if err != nil {
		return "", &invocation.Refusal{Msg: err.Error(), Next: problem.SetKMXHome}
	}
	return root, nil
}

func journalDir(root string) (string, error) {
	dir, err := journal.EnsureDir(root)
	if err != nil {
		var unsafe *state.UnsafeError
		if errors.As(err, &unsafe) {
			return "", &invocation.Refusal{Msg: unsafe.Error(), Next: unsafe.NextStep()}
		}
		return "", fmt.Errorf("prepare state folder: %w", err)
	}
	return dir, nil
}

// newExecutor starts the run's executor: the journaled Sessions executor,
// with the Sessions client a re-grade verifies its copied turns through, or
// the test's replacement (Options.NewExecutor), with no client.
func newExecutor(ctx context.Context, opts Options, j *journal.Journal, plan *invocation.Plan, scratch *scratchArea) (Executor, sessionspb.SessionsClient, func(), error) {
	if opts.NewExecutor != nil {
		exec, stop, err := opts.NewExecutor(j, plan)
		return exec, nil, stop, err
	}
	so := sessions.Options{Journal: j, Resolve: plan.Routes.Resolve, LiveTools: plan.LiveTools()}
	if scratch != nil {
		so.Workspaces = &scratch.reg
	}
	emb, err := sessions.Start(ctx, so)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("start embedded sessions: %w", err)
	}
	se := newSessionsExecutor(emb)
	return se, se.client, func() { emb.Close() }, nil
}

func fileVerdict(exs []ExampleResult) string {
	if len(exs) == 0 {
		return VerdictUnknown
	}
	v, answered := VerdictPass, 0
	for _, ex := range exs {
		switch ex.Verdict {
		case VerdictPass:
		case VerdictAnswered:
			answered++
		case VerdictFail:
			v = VerdictFail
		default:
			if v == VerdictPass {
				v = VerdictUnknown
			}
		}
	}
	if v == VerdictPass && answered == len(exs) {
		return VerdictAnswered
	}
	return v
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// finishJournal finishes j with status, keeping its lock held by hold
// when there is one.
func finishJournal(ctx context.Context, j *journal.Journal, status string, hold *RunHolder) error {
	if hold == nil {
		return j.Finish(ctx, status)
	}
	release, err := j.FinishHeld(ctx, status)
	if err != nil {
		return err
	}
	hold.hold(release)
	return nil
}
