package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// Name is the server name clients see in initialize.
const Name = "kmx"

// Config is what the server is started with (kmx mcp's flags and
// environment), fixed for its lifetime and shared by every call: nothing
// of one tool call is kept here (see call). Endpoints and credential
// variable names come only from here: no tool argument can set them.
type Config struct {
	// Endpoint, KeyEnv, JudgeEndpoint and JudgeKeyEnv are the route settings
	// of kmx mcp's startup flags (variable names, never values).
	Endpoint, KeyEnv, JudgeEndpoint, JudgeKeyEnv string
	// Concurrency is how many examples a Run or Test call runs at once
	// (kmx mcp --concurrency); 0 means invocation.DefaultConcurrency.
	Concurrency int
	// ToolBinding is kmx mcp --tool-bindings, read at startup (nil: none).
	// No tool argument can supply or change a binding.
	ToolBinding *localtools.Binding
	// Getenv reads the server's environment (state folder, named credential
	// variables). Nil reads nothing.
	Getenv func(string) string
	// Version is reported to clients and recorded in journals.
	Version string
	// Logger receives the server's log; it must not write to the protocol
	// stream. Nil discards.
	Logger *slog.Logger
	// Roots are the folders whose *.agent.md files the tools may read,
	// absolute with symlinks resolved (see ResolveRoots). Empty means the
	// working directory. ExplicitRoots says they were given (kmx mcp
	// --root): the client's roots then narrow them instead of replacing
	// them.
	Roots         []string
	ExplicitRoots bool
	// NewExecutor replaces the journaled executor (tests only), as in
	// runner.Options.
	NewExecutor func(j *journal.Journal, p *invocation.Plan) (runner.Executor, func(), error)
	// InvocationBound replaces the invocation bound (tests only; 0: the
	// default), as in runner.Options.
	InvocationBound time.Duration
}

// New returns an MCP server offering Run, Test, Explain and Chat.
func New(cfg Config) *mcp.Server {
	if cfg.Getenv == nil {
		cfg.Getenv = func(string) string { return "" }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Roots) == 0 {
		cfg.Roots, cfg.ExplicitRoots = workingDirRoot(), false
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "kmx (local preview)", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: "kmx runs and tests single-file Markdown agents (*.agent.md) locally. " +
			"Every result is a local preview: not deployment qualification, suite evidence or a passing receipt. " +
			"Pass absolute file paths.",
		Logger: cfg.Logger,
	})
	srv.AddReceivingMiddleware(rejectNonObjectArguments)
	addRun(srv, cfg)
	addTest(srv, cfg)
	addExplain(srv, cfg)
	addChat(srv, cfg)
	return srv
}

// rejectNonObjectArguments makes a tools/call whose arguments are not a JSON
// object a protocol error (invalid params), as a malformed request is. The
// SDK would report it as an isError tool result; that is kept for
// arguments that are an object but do not fit the tool's schema, so a
// model can correct them.
func rejectNonObjectArguments(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
			args := bytes.TrimSpace(r.Params.Arguments)
			if len(args) > 0 && args[0] != '{' && !bytes.Equal(args, []byte("null")) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: arguments must be a JSON object"}
			}
		}
		return next(ctx, method, req)
	}
}

// options turns the startup configuration and a tool's model argument into
// runner options: the same fields the CLI's route flags fill. The endpoints
// are the server's standing configuration, so they apply to non-fake models
// only and choosing fake (by argument or in the file) stays offline.
func (c Config) options(model string) runner.Options {
	opts := runner.NewOptions(runner.Settings{
		Model:         model,
		Endpoint:      c.Endpoint,
		KeyEnv:        c.KeyEnv,
		JudgeEndpoint: c.JudgeEndpoint,
		JudgeKeyEnv:   c.JudgeKeyEnv,
		Concurrency:   c.Concurrency,
		Standing:      true,
	}, c.Getenv, c.Version)
	opts.ToolBinding = c.ToolBinding
	opts.NewExecutor = c.NewExecutor
	opts.InvocationBound = c.InvocationBound
	// What kmx writes into a result names MCP's arguments, not flags.
	opts.Words = words
	return opts
}

// refusal is a tool call kmx would not carry out: what is wrong and what to
// change, as the CLI says it.
type refusal struct {
	msg, next string
	// lines are extra detail (a file's blocking diagnostics).
	lines []string
}

func (r *refusal) Error() string { return r.msg }

// NextStep is what to change (problem.Problem).
func (r *refusal) NextStep() string { return r.next }

// text is the refusal as the CLI prints it, under a local preview heading.
func (r *refusal) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: refused; nothing was reported as passing\n%s\n", runner.Label, problem.WithoutStep(r.msg, r.next))
	for _, l := range r.lines {
		fmt.Fprintf(&b, "%s\n", l)
	}
	// As problem.Text: the next step once, on its own line.
	if r.next != "" {
		fmt.Fprintf(&b, "next: %s\n", r.next)
	}
	return strings.TrimRight(b.String(), "\n")
}

// readAgentFile reads the file a tool names (path, as named) from where
// confine resolved it (real). A relative path is read from the server's
// working directory, which an MCP client chooses, so the refusal says where
// that is.
func readAgentFile(tool, path, real string) ([]byte, error) {
	src, err := agentfile.ReadFile(real)
	if err == nil {
		return src, nil
	}
	var tooLarge *agentfile.TooLargeError
	if errors.As(err, &tooLarge) {
		return nil, &refusal{msg: fmt.Sprintf("%s: %v", tool, err), next: tooLarge.NextStep()}
	}
	err = problem.PathReason(err)
	next := "check the path; kmx reads *.agent.md files"
	if !filepath.IsAbs(path) {
		if wd, wdErr := os.Getwd(); wdErr == nil {
			next = fmt.Sprintf("pass an absolute path: relative paths are read from the server's working directory, %s", wd)
		}
	}
	return nil, &refusal{msg: fmt.Sprintf("%s: cannot read %s: %v", tool, path, err), next: next}
}

// engineRefusal turns the runner's error into a refusal in MCP's words
// (words: arguments, not flags): an invocation.Refusal keeps its message
// and next step; anything else is reported as not a verdict. The refused
// report's refusal says the same.
func engineRefusal(rep *runner.Report, err error) *refusal {
	r, ok := invocation.AsRefusal(err)
	if !ok {
		return problemRefusal(err, problem.StepFor(err, "nothing was reported as passing"))
	}
	out := &refusal{msg: r.MessageIn(words), next: r.NextStepIn(words)}
	if rep != nil && rep.Refusal != nil {
		rep.Refusal.Message, rep.Refusal.Next = out.msg, out.next
	}
	path := ""
	if rep != nil {
		path = rep.Agent.Path
	}
	for _, d := range r.Diagnostics {
		out.lines = append(out.lines, agentfile.DiagnosticLine(path, d))
	}
	return out
}

// problemRefusal is err as a refusal: its own next step when it is a
// problem.Problem, in MCP's words, else fallback.
func problemRefusal(err error, fallback string) *refusal {
	next := problem.NextStepIn(err, words)
	if next == "" {
		next = fallback
	}
	return &refusal{msg: problem.MessageIn(err, words), next: next}
}

// errorResult is a refusal as a tool result: isError true, the refusal's
// text as content. The SDK adds the report (if any) as structured content.
func errorResult(r *refusal) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: r.text()}}}
}

// call is one Run or Test tool call: the arguments the client sent,
// everything that differs from one call to the next. The server's standing
// settings stay in Config.
type call struct {
	// command is "run" or "test" (the tool, as the CLI names it).
	command string
	// file is the file argument as the client gave it.
	file string
	// req is the selection (examples, ad-hoc input); invoke fills in the
	// confined path and its source.
	req invocation.Request
	// model is the model argument ("" for the file's model).
	model string
	// trials and fromRun are Test's arguments (0 and "" when omitted).
	trials  int
	fromRun string
	// progress is the call's progressToken (nil: the client asked for no
	// progress notifications).
	progress any
}

// invoke runs one Run or Test through the engine, as the CLI does, and
// turns the outcome into a tool result. A refusal is an isError result
// carrying the refused report; a completed run is a normal result whatever
// its verdict, with the verdict in the summary.
func invoke(ctx context.Context, cfg Config, ss *mcp.ServerSession, in call) (*mcp.CallToolResult, *runner.Report, error) {
	command, req := in.command, in.req
	tool := words(problem.Setting("kmx "+command), "")
	pf, r := cfg.confinePair(ctx, ss, tool, in.file)
	if r != nil {
		return errorResult(r), nil, nil
	}
	src, err := readAgentFile(tool, pf.agent, pf.real)
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return errorResult(r), nil, nil
		}
		return nil, nil, err
	}
	req.Path, req.Source, req.Read = pf.agent, src, pf.read
	// A fixture workspace is read beside the agent file as named: it must
	// be inside the roots too (symlinks resolved), like the file itself.
	roots := cfg.roots(ctx, ss)
	req.CheckWorkspace = func(path string) error {
		abs, err := filepath.Abs(path)
		if err != nil || !within(resolveExisting(abs), roots) {
			return fmt.Errorf("its workspace %s is not inside this server's roots (%s)", path, strings.Join(roots, " or "))
		}
		return nil
	}
	opts := cfg.options(in.model)
	opts.Trials, opts.FromRun = in.trials, in.fromRun
	newProgress(ctx, ss, in.progress, cfg.Logger).observe(&opts)
	var rep *runner.Report
	if command == "run" {
		rep, err = runner.Run(ctx, opts, req)
	} else {
		rep, err = runner.Test(ctx, opts, req)
	}
	if err != nil {
		return errorResult(engineRefusal(rep, err)), rep, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: summary(rep)}}}, rep, nil
}

// summary is the short text beside the structured report: the label, the
// counts and the file verdict first, then one line per example. It reads
// the verdict from the report and never upgrades it: unknown stays unknown.
func summary(rep *runner.Report) string {
	var b strings.Builder
	s := rep.Summary
	fmt.Fprintf(&b, "%s: %s", runner.Label, s.Counts())
	if s.Refused > 0 {
		fmt.Fprintf(&b, ", %d refused", s.Refused)
	}
	fmt.Fprintf(&b, " — verdict %s (%s %s, model %s via %s; not deployment qualification)",
		rep.Verdict, words(problem.Setting("kmx "+rep.Command), ""), rep.Agent.Path, rep.Route.Agent.Model, rep.Route.Agent.Route)
	if g := rep.Regrade; g != nil {
		fmt.Fprintf(&b, "\nre-grade of run %s: %d agent model calls, %d answers replayed, %d judge samples reused, %d fresh judge samples sent, %d examples not re-graded",
			g.SourceRun, g.AgentCalls, g.Replayed, g.ReusedJudgeSamples, g.JudgeCalls, g.NotRegraded)
	}
	if rep.Trials > 1 {
		fmt.Fprintf(&b, "\n%d trials per example", rep.Trials)
	}
	for _, ex := range rep.Examples {
		fmt.Fprintf(&b, "\n%s %s", ex.Verdict, ex.ID)
		if line := runner.DecidingLine(ex); line != "" {
			fmt.Fprintf(&b, ": %s", line)
		}
		if ex.Answer != nil {
			fmt.Fprintf(&b, "\n  answer: %s", strings.ReplaceAll(strings.TrimRight(*ex.Answer, "\n"), "\n", "\n  "))
		}
		// A multi-turn example: each turn's verdict (the later turns of
		// one that did not pass are "not run"), as kmx test prints them.
		for _, tr := range ex.Turns {
			fmt.Fprintf(&b, "\n  turn %d %s: %s", tr.Turn, tr.Verdict, strings.TrimPrefix(tr.Message, tr.Verdict+": "))
		}
	}
	if line := runner.UsageLine(rep.Usage); line != "" {
		b.WriteString("\n" + line)
	}
	if rep.RunID != "" {
		fmt.Fprintf(&b, "\nrun %s, journal %s", rep.RunID, rep.JournalPath)
	}
	if c := rep.Capture; c != nil {
		if c.Status == runner.CaptureSaved {
			fmt.Fprintf(&b, "\ncaptured %d pending recording(s) into %s (new revision %s; this result is for the executed revision)", len(c.Captured), c.Path, c.Revision)
		} else {
			fmt.Fprintf(&b, "\ncapture %s: %s; next: %s", c.Status, c.Message, c.Next)
		}
	}
	return b.String()
}

// inputSchema is the argument schema of T with every optional argument
// given a single type: the SDK spells a pointer or slice as ["null", T],
// which some clients cannot map onto their tool dialect, and kmx never
// needs an explicit null (leaving the argument out means the same).
func inputSchema[T any]() any {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		// Nil lets the SDK infer the schema itself. The argument types are
		// fixed at compile time, and TestListTools checks their schemas.
		return nil
	}
	for _, p := range s.Properties {
		if len(p.Types) == 2 && p.Types[0] == "null" {
			p.Type, p.Types = p.Types[1], nil
		}
	}
	return s
}
