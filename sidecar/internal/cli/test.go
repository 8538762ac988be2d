package cli

import (
	"context"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/localpreview"
)

const testUsage = "kmx test FILE [--example ID]... [--model NAME] [--endpoint URL [--key-env NAME]] [--judge-endpoint URL [--judge-key-env NAME]] [--concurrency N] [--json] [--junit PATH]"

func runTest(ctx context.Context, env Env, args []string) error {
	if len(args) > 0 && args[0] == "explain" {
		return runTestExplain(ctx, env, args[1:])
	}
	fs := newFlagSet("test")
	var examples stringList
	var rf routeFlags
	var asJSON bool
	var junit string
	fs.Var(&examples, "example", "example `ID` to test (repeatable); default all")
	fs.BoolVar(&asJSON, "json", false, "print the safe JSON report")
	fs.StringVar(&junit, "junit", "", "also write a JUnit XML report to `PATH`")
	rf.register(fs)
	rf.registerConcurrency(fs)
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
	opts := runOptions(env, rf)
	if !asJSON {
		header := onceHeader(env, "test", path)
		opts.OnExample = func(ex localpreview.ExampleResult) {
			header()
			fmt.Fprintf(env.Stdout, "  %-8s %-24s %s\n", verdictWord(ex.Verdict), ex.ID, decidingLine(ex))
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
		printFooter(env.Stdout, rep)
	}
	return finish(env, rep, runErr, asJSON)
}
