// Package cli implements the kmx command line: one file per subcommand, each
// parsing its flags and delegating to the engine packages. Errors are typed
// (UsageError, RefusalError, FailureError) and map to exit codes 2, 2 and 1;
// each says what to do next. The CLI prints results; it decides nothing the
// engine does not.
package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"io"
	"sort"
	"strings"
)

// Env is the process environment a command runs in, passed in so tests can
// run commands in-process without touching the real one.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

type command struct {
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"chat":    {"talk to the agent in a file: one durable conversation per file", runChat},
		"check":   {"check agent files and print their diagnostics", runCheck},
		"journal": {"list, clear, replay or compare retained runs (journal list|clear|inspect|diff)", runJournal},
		"lsp":     {"serve the language server on stdin/stdout (the editor starts it)", runLSP},
		"mcp":     {"serve the MCP tools Run, Test, Explain and Chat on stdin/stdout", runMCP},
		"run":     {"run examples (or an ad-hoc input) and show the answers", runRun},
		"test":    {"test examples and report a verdict per example (test explain FILE: why they failed)", runTest},
		"version": {"print the kmx version", runVersion},
	}
}

// Main runs one kmx command line and returns the process exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if len(args) > 1 && args[0] == "help" {
		// kmx help test == kmx test --help
		args = []string{args[1], "--help"}
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		// kmx --version == kmx version
		args = []string{"version"}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(env.Stdout)
		if len(args) == 0 {
			return ExitRefusal
		}
		return ExitOK
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		return report(env, usagef("run 'kmx help' to see the commands", "kmx: unknown command %q", args[0]))
	}
	return report(env, cmd.run(ctx, env, args[1:]))
}

func report(env Env, err error) int {
	if err == nil {
		return ExitOK
	}
	var help *HelpRequest
	if errors.As(err, &help) {
		fmt.Fprint(env.Stdout, help.Text)
		return ExitOK
	}
	var failure *FailureError
	if !errors.As(err, &failure) {
		printProblem(env, err)
	}
	return exitCode(err)
}

// printProblem prints an error and its next step on stderr, as every
// front renders a problem (problem.Text). A message that already names kmx
// ("kmx check: …", "kmx: …") is printed as it is, never "kmx: kmx check: …".
func printProblem(env Env, err error) {
	fmt.Fprintln(env.Stderr, withKMXPrefix(problem.Text(err)))
}

// withKMXPrefix is msg starting with "kmx", prefixed "kmx: " only when it
// does not already.
func withKMXPrefix(msg string) string {
	if strings.HasPrefix(msg, "kmx: ") || strings.HasPrefix(msg, "kmx ") {
		return msg
	}
	return "kmx: " + msg
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "kmx runs and tests single-file Markdown agents (*.agent.md) locally. Every result is a local preview.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: kmx COMMAND [flags]")
	fmt.Fprintln(w)
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'kmx COMMAND --help' for a command's flags, 'kmx --version' for the version.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 findings or failures, 2 refusal or usage.")
}
