package cli

import (
	"context"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/localpreview"
)

const testUsage = "kmx test FILE [--example ID]... [--model NAME] [--endpoint URL [--key-env NAME]] [--judge-endpoint URL [--judge-key-env NAME]] [--concurrency N] [--tool-bindings PATH] [--trials N | --from RUN] [--json] [--junit PATH]"

func runTest(ctx context.Context, env Env, args []string) error {
	if len(args) > 0 && args[0] == "explain" {
		return runTestExplain(ctx, env, args[1:])
	}
	fs := newFlagSet("test")
	var examples stringList
	var rf routeFlags
	var asJSON bool
	var junit, from string
	var trials trialsFlag
	fs.Var(&examples, "example", "example `ID` to test (repeatable); default all")
	fs.BoolVar(&asJSON, "json", false, "print the safe JSON report")
	fs.StringVar(&junit, "junit", "", "also write a JUnit XML report to `PATH`")
	rf.register(fs)
	rf.registerConcurrency(fs)
	fs.Var(&trials, "trials", fmt.Sprintf("run each example `N` times (1 to %d), each in a fresh Session; mixed outcomes are flaky", localpreview.MaxTrials))
	fs.StringVar(&from, "from", "", "re-grade: evaluate the current assertions against the answers journaled by `RUN`, with zero agent model calls")
	rf.registerToolBindings(fs)
	pos, err := parseInterspersed(fs, args, testUsage)
	if err != nil {
		return err
	}
	path, err := oneFile("test", pos, testUsage)
	if err != nil {
		return err
	}
	src, err := readAgentFile("test", path)
	if err != nil {
		return err
	}
	if from != "" && trials.n > 1 {
		return usagef(testUsage, "kmx test: --trials and --from cannot be combined: a re-grade grades each journaled answer once")
	}
	binding, err := readToolBinding("test", rf)
	if err != nil {
		return err
	}
	opts := runOptions(env, rf)
	opts.Trials, opts.FromRun = trials.n, from
	opts.ToolBinding = binding
	if !asJSON {
		header := onceHeader(env, "test", path)
		opts.OnExample = func(ex localpreview.ExampleResult) {
			header()
			word := verdictWord(ex.Verdict)
			if f := trialsWord(ex); f != "" {
				word = f
			}
			fmt.Fprintf(env.Stdout, "  %-8s %-24s %s\n", word, ex.ID, decidingLine(ex))
			if line := toolLine(ex); line != "" {
				fmt.Fprintf(env.Stdout, "  %-8s %-24s %s\n", "", "", line)
			}
		}
	}
	rep, runErr := localpreview.Test(ctx, opts, localpreview.Request{Path: path, Source: src, Examples: examples})
	if junit != "" && rep != nil {
		if err := writeJUnit(junit, rep); err != nil {
			return err
		}
	}
	if runErr == nil && !asJSON {
		printTrialsAndRegrade(env.Stdout, rep)
		printFooter(env.Stdout, rep)
	}
	return finish(env, rep, runErr, asJSON)
}
