package invocation

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/failures"
	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// Bounds of a plan.
const (
	// DefaultConcurrency is how many examples run at once unless Options
	// says otherwise; MaxConcurrency is the most it may say.
	DefaultConcurrency = 4
	MaxConcurrency     = 32
	// MaxAdHocInput is the largest ad-hoc Run input, in bytes.
	MaxAdHocInput = 16 << 10
	// DefaultModel is used when neither the caller nor the file names one.
	DefaultModel = "gpt-5.6-terra"
)

// Mode is what an invocation is for: Run shows each answer, Test judges
// the examples and records the verdicts. It is journaled as the run's
// command and reported as the report's command.
type Mode string

// The two modes.
const (
	ModeRun  Mode = "run"
	ModeTest Mode = "test"
)

// Purposes of a turn.
const (
	PurposeAgent = "agent"
	PurposeJudge = "judge"
)

// AdHocID is the example ID of a Run's ad-hoc input.
const AdHocID = "(input)"

// Options are what an invocation's plan is decided from: the state folder,
// the routes and the tool binding. The zero value of every field but
// StateDir is usable. The runner's options add how the examples run; a
// conversation's are these alone.
type Options struct {
	// Regrade: the run re-grades a journaled run (kmx test --from), so no
	// fixture workspace is read: file assertions are judged from the
	// source's journaled workspace outcome.
	Regrade bool
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
	// Concurrency is how many examples run at once, 1 to MaxConcurrency; 0
	// means DefaultConcurrency. Each example still gets its own Session in
	// the one journal, and results are reported in file order. 1 runs the
	// examples strictly one after another.
	Concurrency int
	// Version is the kmx version recorded in the journal.
	Version string
	// Words is how the front names settings and commands in the messages
	// kmx writes into a result (an unknown verdict's reason, a re-grade's
	// refusal of an example): nil is the command line's flags
	// (problem.Flags), as the CLI and the language server say them.
	Words problem.Words
}

// Wording is the front's words: Words, or the command line's.
func (o Options) Wording() problem.Words {
	if o.Words == nil {
		return problem.Flags
	}
	return o.Words
}

// Say is s in the front's words.
func (o Options) Say(s problem.Sentence) string { return s(o.Wording()) }

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
	// CheckWorkspace, when set, is a front's check of a fixture folder
	// (its path beside Path) before it is read: MCP refuses one outside
	// the roots. Its error's text is the refusal; nothing is created.
	CheckWorkspace func(path string) error
	// Examples selects example IDs; empty selects all.
	Examples []string
	// Input is ad-hoc input for Run. Alone it replaces the example
	// selection; with Examples it runs after them, in the same invocation
	// and journal.
	Input *string
	// Baseline, when set, sends its instructions instead of the file's
	// (a comparison's baseline; Test only).
	Baseline *Baseline
}

// Plan is everything decided before anything is created or sent. A refused
// Prepare still returns the plan as far as it got (the agent file's path,
// its agent and the examples selected), so a refused report can name them.
type Plan struct {
	// Path is the agent file's path (of a pair, the agent file);
	// ExamplesPath its sibling examples file when the examples live there.
	Path, ExamplesPath string
	Agent              *agentfile.Agent
	Selected           []agentfile.Example
	// Subset: the request selected examples or gave ad-hoc input.
	Subset bool
	// Baseline is the request's baseline, when it has one: Agent then
	// holds its instructions and revision.
	Baseline *Baseline
	AdHoc    *string
	// Routes is set once the plan is complete.
	Routes *Routes
	// tools is kmx.yaml's frozen settings and each example's tool set.
	tools planTools
	// workspaces is each selected example's fixture workspace, if any.
	workspaces planWorkspaces
	// subject is the file subject for retained failures, frozen before any
	// model send so a later path replacement cannot rebind the record.
	subject    string
	subjectErr error
	// liveTools answers live-bound tools' calls: the --tool-bindings read,
	// or the editor route's tool binding; else nil.
	liveTools harness.LiveTools
	// files holds the exact bytes parsed at run start, by path.
	files map[string][]byte
	// echoed holds the resolved credentials when the plan was refused
	// because its content holds one (see HoldsCredential).
	echoed []route.CredentialChecker
}

// Subject is the file subject retained failures are filed under, frozen
// before any model send.
func (p *Plan) Subject() (string, error) { return p.subject, p.subjectErr }

// Parsed is the exact text of path parsed at run start (the agent file or
// its sibling examples file).
func (p *Plan) Parsed(path string) ([]byte, bool) {
	b, ok := p.files[path]
	return b, ok
}

// Prepare parses and checks everything that can be refused, before any
// journal exists or any request is sent. Every problem is a *Refusal that
// says what to change.
func Prepare(ctx context.Context, opts Options, req Request) (*Plan, error) {
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
		return nil, Refuse("open the agent file itself, or put it beside its examples file", "%v", err)
	}
	req.Path = agentPath
	plan, err := prepareParsed(ctx, opts, req, res)
	plan.files = files
	return plan, err
}

// prepareParsed is Prepare on a parse the caller already has (Preflight);
// req.Path is the agent file's path. The plan is never nil.
func prepareParsed(ctx context.Context, opts Options, req Request, res agentfile.Result) (*Plan, error) {
	plan := &Plan{Path: req.Path, Agent: res.Agent}
	if res.Agent != nil && res.Agent.ExamplesFile != "" {
		plan.ExamplesPath = agentfile.SiblingExamplesPath(req.Path)
	}
	plan.subject, plan.subjectErr = failures.Subject(req.Path)
	if req.Input == nil || len(req.Examples) > 0 {
		if sel, err := selectExamples(res.Agent, req.Examples); err == nil {
			plan.Selected = sel
			if len(req.Examples) > 0 {
				plan.Subset = true
			}
		} else if res.State == agentfile.Valid {
			return plan, err
		}
	}
	if res.State != agentfile.Valid {
		return plan, fileRefusal(req.Path, res)
	}
	if b := req.Baseline; b != nil {
		if req.Input != nil {
			return plan, Refuse("compare the file's examples with a baseline, without --input", "a baseline runs the file's examples, not an ad-hoc input")
		}
		// A copy: the parse may be shared (the editor's), and only this
		// plan sends the baseline's instructions.
		a := *plan.Agent
		a.Instructions, a.Revision = b.Instructions, b.Revision
		plan.Agent, plan.Baseline = &a, b
	}
	if req.Input != nil {
		if err := checkAdHoc(*req.Input); err != nil {
			return plan, err
		}
		plan.AdHoc = req.Input
		plan.Subset = true
	} else if len(plan.Selected) == 0 {
		return plan, noExamples(req.Path)
	}
	for _, ex := range plan.Selected {
		for _, turn := range ex.Script() {
			for _, a := range turn.Assertions {
				switch {
				case a.Type == agentfile.Contains || a.Type == agentfile.NotContains || a.Type == agentfile.Regex || a.Type == agentfile.LLMJudge:
				case a.Type.IsFileAssertion():
					// Judged from the turn's workspace outcome; the parser
					// refused one on an example without a workspace (KMX3007).
				case a.Type.IsBudget():
				case a.Type.IsTrajectory():
					if len(plan.Agent.Tools) == 0 {
						return plan, refuseAt(a.Range, "declare the agent's tools in the agent file, or remove the assertion",
							"example %q asserts %s, but the agent file declares no tools: tool assertions are judged on the tool harness only", ex.ID, a.Type)
					}
				default:
					return plan, refuseAt(a.Range, "use contains, notContains, regex, llmJudge, a tool or file assertion or a budget", "example %q uses unsupported assertion type %q", ex.ID, a.Type)
				}
			}
		}
	}
	if opts.Concurrency < 0 || opts.Concurrency > MaxConcurrency {
		return plan, Refuse(fmt.Sprintf("set the concurrency to a number from 1 to %d (default %d)", MaxConcurrency, DefaultConcurrency),
			"concurrency %d is outside 1 to %d", opts.Concurrency, MaxConcurrency)
	}
	if err := prepareTools(opts, req, plan); err != nil {
		return plan, err
	}
	if err := prepareWorkspaces(opts, req, plan); err != nil {
		return plan, err
	}
	rt, err := resolveRoutes(ctx, opts, plan)
	if err != nil {
		return plan, err
	}
	if err := bindEditorTools(ctx, plan, rt); err != nil {
		return plan, err
	}
	if err := checkToolRoute(plan, rt, req.Source); err != nil {
		return plan, err
	}
	if err := checkCredentialEcho(req.Path, plan, rt); err != nil {
		plan.echoed = credentialHolders(rt)
		return plan, err
	}
	plan.Routes = rt
	return plan, nil
}

func checkAdHoc(input string) error {
	if len(input) > MaxAdHocInput {
		return Refuse("shorten the input to at most 16 KiB, or put it in an example", "the ad-hoc input is %d bytes; the limit is %d", len(input), MaxAdHocInput)
	}
	if strings.TrimSpace(input) == "" {
		return RefuseIn(func(w problem.Words) string {
			ways := w(problem.Input, "TEXT")
			if f := w(problem.InputFile, "PATH"); f != "" {
				ways += " or " + f
			}
			return "pass the text to send with " + ways
		}, nil, "the ad-hoc input is empty")
	}
	if f := secrets.Scan(input); len(f) > 0 {
		return Refuse("remove the credential from the input; kmx never sends or journals credential-shaped text",
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
			return nil, Refuse("choose one of: "+strings.Join(known, ", "), "no example with id %q", id)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, a.Examples[i])
		}
	}
	return out, nil
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

// noExamples refuses an agent file with no examples to run. Its next step
// proposes the examples file beside the agent (NAME.agent.examples.yaml),
// which leaves the agent file byte for byte as VS Code runs it, rather
// than editing the agent.
func noExamples(path string) *Refusal {
	next := fmt.Sprintf("add a '## Examples' section with a yaml list of examples to %s", path)
	if sib := agentfile.SiblingExamplesPath(path); sib != "" {
		next = fmt.Sprintf("put its examples beside it in %s (a yaml list: - id: NAME, input: TEXT, assert: [...]); the agent file stays unchanged", sib)
	}
	r := Refuse(next, "%s has no examples to run", path)
	r.NoExamples = true
	return r
}
