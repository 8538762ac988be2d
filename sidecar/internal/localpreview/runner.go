package localpreview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/failures"
	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
	"github.com/kmxdev/kmx/sidecar/internal/sessions"
	"github.com/kmxdev/kmx/sidecar/internal/state"
	"github.com/kmxdev/kmx/sidecar/internal/version"
)

// Bounds that apply unless Options says otherwise.
const (
	DefaultExampleDeadline = 2 * time.Minute
	DefaultInvocationBound = 5 * time.Minute
	// DefaultConcurrency is how many examples run at once unless Options
	// says otherwise; MaxConcurrency is the most it may say.
	DefaultConcurrency = 4
	MaxConcurrency     = 32
	// MaxAdHocInput is the largest ad-hoc Run input, in bytes.
	MaxAdHocInput = 16 << 10
	// DefaultModel is used when neither the caller nor the file names one.
	DefaultModel = "gpt-5.6-terra"
)

// Options configure one invocation. The zero value of every field but
// StateDir is usable.
type Options struct {
	// StateDir is the kmx state root; journals live under
	// StateDir/local-preview/journals. Empty resolves it from the
	// environment (KMX_HOME, else the OS config folder).
	StateDir string
	// Getenv reads the environment: only KMX_HOME/XDG/HOME for the state
	// folder and the variable named by KeyEnv/JudgeKeyEnv.
	Getenv func(string) string
	// Model is a runtime override (editor picker, --model, MCP argument).
	Model string
	// Endpoints: see the route package. Empty means none.
	Endpoint, KeyEnv, JudgeEndpoint, JudgeKeyEnv string
	// StandingRoutes says the endpoints are a front's standing
	// configuration (editor settings, MCP startup flags) rather than a
	// choice made for this invocation (CLI flags). They then apply to
	// non-fake models only: the fake model and fake judge stay offline, and
	// a judge endpoint with no llmJudge in the selection is simply unused,
	// where an explicit combination is refused.
	StandingRoutes bool
	// Editor, when set, serves the editor route: a non-fake model with no
	// endpoint is resolved against the models VS Code offers (once, before
	// the journal exists) and sent through it. Only the language server
	// sets it; without it such a model is refused.
	Editor route.EditorHost
	// HTTPClient, when set, carries compatible-route requests (tests pass
	// one that trusts their TLS server). Redirects are refused whatever it
	// says; nil dials the endpoint directly with the system's roots.
	HTTPClient *http.Client
	// ToolBinding is the --tool-bindings file, already read and checked
	// (nil: no binding). Its credential variable is read once per
	// invocation, and only when the file declares the bound tool Enabled.
	ToolBinding *localtools.Binding

	ExampleDeadline time.Duration
	InvocationBound time.Duration
	// Concurrency is how many examples run at once, 1 to MaxConcurrency; 0
	// means DefaultConcurrency. Each example still gets its own Session in
	// the one journal, and results are reported in file order. 1 runs the
	// examples strictly one after another.
	Concurrency int
	// Trials runs each example this many times (1 to MaxTrials; 0 is 1),
	// each in a fresh Session of the one journal. Test only.
	Trials int
	// FromRun re-grades: the answers come from this retained run's journal
	// (replayed with zero agent model calls), and only the assertions are
	// evaluated again. Test only.
	FromRun string

	// ShowContent includes answers in the report. Run sets it.
	ShowContent bool
	// OnExample, when set, receives each example's result in selection
	// order, as soon as it and every example before it are decided (for
	// streaming output).
	OnExample func(ExampleResult)
	// OnFinished, when set, receives each example's result as soon as it is
	// decided, in the order examples finish (for progress counts). Neither
	// callback is ever called concurrently with itself or the other.
	OnFinished func(ExampleResult)
	// NewExecutor replaces the journaled Sessions executor (tests only). The
	// returned executor's results are reported with its own Journaled flag.
	NewExecutor func(j *journal.Journal, p *Plan) (Executor, func(), error)
	// Version is the kmx version recorded in the journal.
	Version string
	// CaptureAsEdit returns a capture as an edit (Report.Capture.Edits)
	// instead of writing the file: the editor applies it as one undoable
	// WorkspaceEdit. The CLI and MCP leave it false and the file is edited.
	CaptureAsEdit bool
}

// Request names the file and what to run.
type Request struct {
	// Path is the agent file or its sibling examples file; Source is that
	// file's text. The runner resolves the other file of a pair through
	// Read (see agentfile.ParseFile); the report and retained failures are
	// filed under the agent file.
	Path   string
	Source []byte
	// Read returns the text of the other file of a pair (an open editor
	// buffer, or the file on disk); nil reads the disk.
	Read func(path string) ([]byte, error)
	// Examples selects example IDs; empty selects all.
	Examples []string
	// Input is ad-hoc input for Run. Alone it replaces the example
	// selection; with Examples it runs after them, in the same invocation
	// and journal.
	Input *string
}

// Run executes the selected examples (or the ad-hoc input) and shows each
// answer; assertions are checked too, so a Run of an example has a verdict.
func Run(ctx context.Context, opts Options, req Request) (*Report, error) {
	opts.ShowContent = true
	return invoke(ctx, "run", opts, req)
}

// Test executes the selected examples and judges them.
func Test(ctx context.Context, opts Options, req Request) (*Report, error) {
	if req.Input != nil {
		return nil, refuse("use kmx run FILE --input TEXT to try an input; kmx test runs the file's examples", "ad-hoc input is for Run, not Test")
	}
	return invoke(ctx, "test", opts, req)
}

func invoke(ctx context.Context, command string, opts Options, req Request) (*Report, error) {
	start := time.Now()
	rep := &Report{Schema: ReportSchema, Label: Label, Command: command, Agent: AgentRef{Path: req.Path}, Selection: "full", Examples: []ExampleResult{}}
	if err := checkTrials(opts, command); err != nil {
		return refusedReport(rep, err, start), err
	}
	plan, err := prepare(ctx, opts, req, rep)
	if err != nil {
		return refusedReport(rep, err, start), err
	}
	if err := execute(ctx, command, opts, plan, rep); err != nil {
		return refusedReport(rep, err, start), err
	}
	rep.DurationMs = ms(time.Since(start))
	return rep, nil
}

// refusedReport marks a report as refused when err is a Refusal (other
// errors keep whatever the report had; they are reported by the caller).
func refusedReport(rep *Report, err error, start time.Time) *Report {
	r, ok := AsRefusal(err)
	if !ok {
		return rep
	}
	rep.Verdict = VerdictRefused
	rep.Refusal = &RefusalReport{Message: r.Msg, Next: r.Next, Diagnostics: r.Diagnostics}
	for i := range rep.Examples {
		rep.Examples[i].Verdict = VerdictRefused
		rep.Examples[i].Message = r.Msg
	}
	rep.Summary = Summary{Refused: len(rep.Examples)}
	rep.DurationMs = ms(time.Since(start))
	return rep
}

// Plan is everything decided before anything is created or sent.
type Plan struct {
	Agent    *agentfile.Agent
	Selected []agentfile.Example
	AdHoc    *string
	Routes   *routes
	// tools is kmx.yaml's frozen settings and each example's tool set.
	tools planTools
	// subject is the file subject for retained failures, frozen before any
	// model send so a later path replacement cannot rebind the record.
	subject    string
	subjectErr error
	// regrade is set for a re-grade (Options.FromRun).
	regrade *regrade
	// liveTools answers live-bound tools' calls: the --tool-bindings read,
	// or the editor route's tool binding; else nil.
	liveTools harness.LiveTools
	// files holds the exact bytes parsed at run start, by path.
	files map[string][]byte
}

// prepare parses and checks everything that can be refused, before any
// journal exists or any request is sent.
func prepare(ctx context.Context, opts Options, req Request, rep *Report) (*Plan, error) {
	// The exact bytes parsed, per path: a capture edits them, and only
	// while the file still holds them.
	files := map[string][]byte{req.Path: req.Source}
	read := req.reader()
	res, agentPath, err := agentfile.ParseFile(req.Path, req.Source, func(p string) ([]byte, error) {
		b, err := read(p)
		if err == nil {
			files[p] = b
		}
		return b, err
	})
	if err != nil {
		return nil, refuse("open the agent file itself, or put it beside its examples file", "%v", err)
	}
	req.Path = agentPath
	rep.Agent.Path = agentPath
	plan, err := prepareParsed(ctx, opts, req, res, rep)
	if plan != nil {
		plan.files = files
	}
	return plan, err
}

// prepareParsed is prepare on a parse the caller already has (Preflight);
// req.Path is the agent file's path.
func prepareParsed(ctx context.Context, opts Options, req Request, res agentfile.Result, rep *Report) (*Plan, error) {
	agentPath := req.Path
	if res.Agent != nil {
		rep.Agent.ID = res.Agent.ID
		rep.Agent.Name = res.Agent.Name
		rep.Agent.Revision = res.Agent.Revision
		if res.Agent.ExamplesFile != "" {
			rep.Agent.ExamplesPath = agentfile.SiblingExamplesPath(agentPath)
		}
	}
	plan := &Plan{Agent: res.Agent}
	plan.subject, plan.subjectErr = failures.Subject(req.Path)
	if req.Input == nil || len(req.Examples) > 0 {
		if sel, err := selectExamples(res.Agent, req.Examples); err == nil {
			plan.Selected = sel
			rep.Examples = slices.Grow(rep.Examples, len(sel))
			for _, ex := range sel {
				r := ex.Range
				rep.Examples = append(rep.Examples, ExampleResult{ID: ex.ID, Range: &r})
			}
			if len(req.Examples) > 0 {
				rep.Selection = "subset"
			}
		} else if res.State == agentfile.Valid {
			return nil, err
		}
	}
	if res.State != agentfile.Valid {
		return nil, fileRefusal(req.Path, res)
	}
	if req.Input != nil {
		if err := checkAdHoc(*req.Input); err != nil {
			return nil, err
		}
		plan.AdHoc = req.Input
		rep.Selection = "subset"
		rep.Examples = append(rep.Examples, ExampleResult{ID: adHocID, AdHoc: true})
	} else if len(plan.Selected) == 0 {
		return nil, refuse(fmt.Sprintf("add a '## Examples' section with a yaml list of examples to %s", req.Path), "%s has no examples to run", req.Path)
	}
	for _, ex := range plan.Selected {
		for _, a := range ex.Assertions {
			switch a.Type {
			case agentfile.Contains, agentfile.NotContains, agentfile.Regex, agentfile.LLMJudge:
			case agentfile.ToolCalled, agentfile.ToolNotCalled:
				if len(plan.Agent.Tools) == 0 {
					return nil, refuseAt(a.Range, fmt.Sprintf("declare %q in the agent file's tools, or remove the assertion", a.Value),
						"example %q asserts %s, but the agent file declares no tools: tool assertions are judged on the tool harness only", ex.ID, a.Type)
				}
			default:
				return nil, refuseAt(a.Range, "use contains, notContains, regex or llmJudge", "example %q uses unsupported assertion type %q", ex.ID, a.Type)
			}
		}
	}
	if opts.Concurrency < 0 || opts.Concurrency > MaxConcurrency {
		return nil, refuse(fmt.Sprintf("set the concurrency to a number from 1 to %d (default %d)", MaxConcurrency, DefaultConcurrency),
			"concurrency %d is outside 1 to %d", opts.Concurrency, MaxConcurrency)
	}
	if err := prepareTools(opts, req, plan); err != nil {
		return nil, err
	}
	rt, err := resolveRoutes(ctx, opts, plan)
	if err != nil {
		return nil, err
	}
	if err := bindEditorTools(ctx, plan, rt); err != nil {
		return nil, err
	}
	if err := checkToolRoute(plan, rt, req.Source); err != nil {
		return nil, err
	}
	if err := checkCredentialEcho(req.Path, plan, rt); err != nil {
		withholdCredentialEcho(rep, rt)
		return nil, err
	}
	plan.Routes = rt
	rep.Route.Agent = Identity{Route: rt.agent.Route, Model: rt.agent.Model}
	if rt.judge != nil {
		rep.Route.Judge = &Identity{Route: rt.judge.Route, Model: rt.judge.Model}
	}
	return plan, nil
}

const adHocID = "(input)"

func checkAdHoc(input string) error {
	if len(input) > MaxAdHocInput {
		return refuse("shorten the input to at most 16 KiB, or put it in an example", "the ad-hoc input is %d bytes; the limit is %d", len(input), MaxAdHocInput)
	}
	if strings.TrimSpace(input) == "" {
		return refuse("pass the text to send with --input TEXT or --input-file PATH", "the ad-hoc input is empty")
	}
	if f := secrets.Scan(input); len(f) > 0 {
		return refuse("remove the credential from the input; kmx never sends or journals credential-shaped text",
			"the ad-hoc input contains a credential-shaped value (%s) at byte %d", f[0].Shape, f[0].Start)
	}
	return nil
}

func selectExamples(a *agentfile.Agent, ids []string) ([]agentfile.Example, error) {
	if a == nil {
		return nil, nil
	}
	if len(ids) == 0 {
		return a.Examples, nil
	}
	byID := make(map[string]int, len(a.Examples))
	for i, ex := range a.Examples {
		byID[ex.ID] = i
	}
	seen := map[string]bool{}
	var out []agentfile.Example
	for _, id := range ids {
		i, ok := byID[id]
		if !ok {
			known := make([]string, 0, len(a.Examples))
			for _, ex := range a.Examples {
				known = append(known, ex.ID)
			}
			return nil, refuse("choose one of: "+strings.Join(known, ", "), "no example with id %q", id)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, a.Examples[i])
		}
	}
	return out, nil
}

// execute opens the journal, runs every selected example and fills rep.
func execute(ctx context.Context, command string, opts Options, plan *Plan, rep *Report) error {
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
	if opts.FromRun != "" {
		// The source is read whole (and replayed with zero calls) before
		// this run's journal exists: a bad source refuses the re-grade,
		// and retention cannot remove it from under us.
		if plan.regrade, err = planRegrade(ctx, dir, plan, opts.FromRun); err != nil {
			return err
		}
	}
	j, err := journal.Create(ctx, dir, journal.RunMeta{
		KmxVersion:    opts.Version,
		AgentID:       plan.Agent.ID,
		AgentRevision: plan.Agent.Revision,
		Command:       command,
		Label:         Label,
	})
	if err != nil {
		var unsafe *state.UnsafeError
		if errors.As(err, &unsafe) {
			return &Refusal{Msg: unsafe.Error(), Next: unsafe.NextStep()}
		}
		return fmt.Errorf("create journal: %w", err)
	}
	// Execution provenance: the settings this run froze (a refusal before
	// this point has none).
	rep.ToolSettings = plan.tools.report()
	rep.Agent.SettingsRevision = plan.tools.revision()
	// Retention runs while this run's lock is held, so the run is never its
	// own candidate. Its errors are ignored on purpose: cleaning up older
	// runs is not part of this run's result, the next start tries again,
	// and kmx journal list shows what is left.
	_, _ = journal.Retain(dir, journal.KeepRuns)

	exec, stop, err := newExecutor(ctx, opts, j, plan)
	if err != nil {
		_ = j.Finish(context.WithoutCancel(ctx), journal.StatusFailed)
		return err
	}
	counter := &countingExecutor{next: exec}
	var top Executor = counter
	var rx *regradeExecutor
	if plan.regrade != nil {
		se, ok := exec.(*sessionsExecutor)
		if !ok {
			stop()
			_ = j.Finish(context.WithoutCancel(ctx), journal.StatusFailed)
			return errors.New("a re-grade needs the journaled Sessions executor")
		}
		rx = &regradeExecutor{rg: plan.regrade, plan: plan, j: j, client: se.client, next: counter}
		top = rx
	}
	l := &loop{opts: opts, plan: plan, exec: top, rep: rep}
	l.run(ctx)
	stop()
	// The examples are done: what they held in flight is garbage, and the
	// heap holds every result. Collecting it now lets the run.result record
	// and the journal's final checkpoint reuse that memory rather than grow
	// the heap at the run's peak (about 1 MiB less peak RSS at 2,000
	// examples, for one collection of a few milliseconds).
	runtime.GC()
	if rx != nil {
		rep.Regrade = &RegradeReport{SourceRun: plan.regrade.source, AgentCalls: int(counter.agent.Load()), JudgeCalls: int(counter.judge.Load()),
			ReusedJudgeSamples: int(rx.reused.Load()), Replayed: int(rx.replay.Load()), NotRegraded: len(plan.regrade.refused)}
	}
	if n := trialsOf(opts); n > 1 {
		rep.Trials = n
	}
	if command == "test" {
		// A result that cannot be recorded leaves the run without verdicts
		// in its journal (kmx journal diff then says so); it does not
		// change them.
		_ = writeResult(ctx, j, plan, rep, journal.RunResult{SourceRun: opts.FromRun, Trials: trialsOf(opts), AgentCalls: int(counter.agent.Load()), JudgeCalls: int(counter.judge.Load())})
	}

	status := journal.StatusFinished
	if ctx.Err() != nil {
		status = journal.StatusCancelled
	}
	if err := j.Finish(context.WithoutCancel(ctx), status); err != nil {
		// A journal that did not finalize cannot back a pass.
		l.demote("the journal could not be finalized")
		return fmt.Errorf("finish journal: %w", err)
	}
	// The run's identity is exposed only once its journal is final: a
	// report never points at a journal that could still change or vanish.
	rep.RunID = j.ID()
	rep.JournalPath = j.Path()
	rep.Journaled = l.journaled()
	rep.Verdict = fileVerdict(rep.Examples)
	// Run, a passing Test, cancellation and execution failure keep no
	// failure record.
	if command == "test" && rep.Verdict != VerdictPass && status == journal.StatusFinished && !l.execFailed {
		rep.Retention = retain(root, plan, rep)
	}
	// A pending recording a live call answered is captured only now, from
	// the finalized journal. A capture that was due and not saved
	// withholds full success: the file verdict is then not a pass.
	if status == journal.StatusFinished {
		rep.Capture = capture(ctx, opts, plan, rep, dir)
		if c := rep.Capture; c != nil && (c.Status == CaptureRefused || c.Status == CaptureFailed) && rep.Verdict == VerdictPass {
			rep.Verdict = VerdictUnknown
		}
	}
	return nil
}

// StateRoot is the state folder opts name: StateDir when set, else the
// platform default from the environment (KMX_HOME and the OS's rules; see
// state.Dir). The CLI, the language server and conversations all find it
// here, so they agree on it.
func StateRoot(opts Options) (string, error) {
	if opts.StateDir != "" {
		return opts.StateDir, nil
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	return state.Dir(getenv, runtime.GOOS)
}

// stateRoot is StateRoot with a failure as the runner's refusal.
func stateRoot(opts Options) (string, error) {
	root, err := StateRoot(opts)
	if err != nil {
		return "", &Refusal{Msg: err.Error(), Next: problem.SetKMXHome}
	}
	return root, nil
}

func journalDir(root string) (string, error) {
	dir, err := journal.EnsureDir(root)
	if err != nil {
		var unsafe *state.UnsafeError
		if errors.As(err, &unsafe) {
			return "", &Refusal{Msg: unsafe.Error(), Next: unsafe.NextStep()}
		}
		return "", fmt.Errorf("prepare state folder: %w", err)
	}
	return dir, nil
}

func newExecutor(ctx context.Context, opts Options, j *journal.Journal, plan *Plan) (Executor, func(), error) {
	if opts.NewExecutor != nil {
		return opts.NewExecutor(j, plan)
	}
	emb, err := sessions.Start(ctx, sessions.Options{Journal: j, Resolve: plan.Routes.resolve, LiveTools: plan.liveTools})
	if err != nil {
		return nil, nil, fmt.Errorf("start embedded sessions: %w", err)
	}
	return newSessionsExecutor(emb), func() { emb.Close() }, nil
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

// maxPairFile bounds the other file of a pair read from disk.
const maxPairFile = 8 << 20

func (req Request) reader() func(string) ([]byte, error) {
	if req.Read != nil {
		return req.Read
	}
	return ReadPairFile
}

// ReadPairFile reads the other file of an agent pair from disk, at most
// 8 MiB.
func ReadPairFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPairFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPairFile {
		return nil, fmt.Errorf("%s is larger than 8 MiB", filepath.Base(path))
	}
	return b, nil
}
