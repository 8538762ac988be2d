package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

const runUsage = "kmx run FILE [--example ID]... [--input TEXT | --input-file PATH|-] [--model NAME] [--endpoint URL [--key-env NAME]] [--judge-endpoint URL [--judge-key-env NAME]] [--concurrency N] [--tool-bindings PATH] [--keep-workspace] [--json]"

func runRun(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("run")
	var examples stringList
	var rf routeFlags
	var input, inputFile optionalString
	var asJSON bool
	fs.Var(&examples, "example", "example `ID` to run (repeatable); default all")
	fs.Var(&input, "input", "ad-hoc input `TEXT` to send (after the --example ones, if any)")
	fs.Var(&inputFile, "input-file", "read the ad-hoc input from `PATH` (- for standard input)")
	fs.BoolVar(&asJSON, "json", false, "print the JSON report (answers included)")
	var keepWorkspace bool
	fs.BoolVar(&keepWorkspace, "keep-workspace", false, "keep each example's scratch copy of its fixture workspace after the run, and name it")
	rf.register(fs)
	rf.registerConcurrency(fs)
	rf.registerToolBindings(fs)
	pos, err := parseInterspersed(fs, args, runUsage)
	if err != nil {
		return err
	}
	path, err := oneFile("run", pos, runUsage)
	if err != nil {
		return err
	}
	if input.set && inputFile.set {
		return usagef(runUsage, "kmx run: pass --input or --input-file, not both")
	}
	req := invocation.Request{Path: path, Examples: examples}
	if input.set {
		req.Input = &input.value
	}
	if inputFile.set {
		text, err := readInputFile(env, inputFile.value)
		if err != nil {
			return err
		}
		req.Input = &text
	}
	if req.Source, err = readAgentFile("run", path); err != nil {
		return err
	}
	binding, err := readToolBinding("run", rf)
	if err != nil {
		return err
	}
	opts := runOptions(env, rf)
	opts.ToolBinding = binding
	opts.KeepWorkspace = keepWorkspace
	if !asJSON {
		header := onceHeader(env, "run", path)
		opts.OnExample = func(ex runner.ExampleResult) { header(); printAnswer(env.Stdout, ex) }
	}
	rep, runErr := runner.Run(ctx, opts, req)
	if runErr == nil && !asJSON {
		printFooter(env.Stdout, rep, colourOn(env))
	}
	return finish(env, rep, runErr, asJSON)
}

func printAnswer(w io.Writer, ex runner.ExampleResult) {
	fmt.Fprintf(w, "\n── %s ── %s\n", ex.ID, verdictWord(ex.Verdict))
	if ex.Answer != nil {
		fmt.Fprintln(w, indent(sanitizeForTerminal(*ex.Answer)))
	}
	// A multi-turn example: each turn's answer under its verdict.
	for _, t := range ex.Turns {
		word := verdictWord(t.Verdict)
		if t.Verdict == runner.VerdictNotRun {
			word = "NOT RUN"
		}
		fmt.Fprintf(w, "   turn %d · %s\n", t.Turn, word)
		if t.Answer != nil {
			fmt.Fprintln(w, indent(indent(sanitizeForTerminal(*t.Answer))))
		}
	}
	if line := runner.DecidingLine(ex); line != "" && ex.Verdict != runner.VerdictPass {
		fmt.Fprintf(w, "   %s\n", line)
	}
	if line := toolLine(ex); line != "" {
		fmt.Fprintf(w, "   %s\n", line)
	}
	// Run shows content: what the turn changed in its workspace, as diffs.
	printWorkspaceAt(w, ex, "   ", true)
}

func indent(s string) string {
	return "   " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n   ")
}

// sanitizeForTerminal drops control characters (other than newline and tab)
// so a model's answer cannot move the cursor or change the terminal.
func sanitizeForTerminal(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

func readInputFile(env Env, path string) (string, error) {
	var r io.Reader
	if path == "-" {
		r = env.Stdin
	} else {
		return readSmallFile(path)
	}
	b, err := io.ReadAll(io.LimitReader(r, invocation.MaxAdHocInput+1))
	if err != nil {
		return "", usagef(runUsage, "kmx run: cannot read standard input: %v", err)
	}
	return string(b), nil
}
