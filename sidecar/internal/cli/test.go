package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

const testUsage = "kmx test FILE|FOLDER... [--shard K/N] [--example ID]... [--model NAME]... [--baseline REV|none] [--endpoint URL [--key-env NAME]] [--judge-endpoint URL [--judge-key-env NAME]] [--concurrency N] [--tool-bindings PATH] [--keep-workspace] [--show-content] [--trials N | --from RUN] [--json | --format text|json|markdown] [--junit PATH]"

// TestFilesSchema versions the combined JSON of kmx test over several files.
const TestFilesSchema = "kmx.test.files/v1"

// testedFiles is kmx test --json over a folder, several files or a shard:
// one report per file, each its own invocation and journal.
type testedFiles struct {
	Schema string `json:"schema"`
	Label  string `json:"label"`
	// Verdict is the invocation's: refused if any file was refused, else
	// fail if any failed, else unknown if any is unknown, else pass.
	Verdict string `json:"verdict"`
	// Summary counts the examples of every file together.
	Summary runner.Summary   `json:"summary"`
	Files   []*runner.Report `json:"files"`
}

// overall is the verdict and example counts of several files; refused is
// how many files were refused (with or without a report).
func overall(reps []*runner.Report, refused int) (string, runner.Summary) {
	var sum runner.Summary
	rank := map[string]int{runner.VerdictPass: 0, runner.VerdictAnswered: 0, runner.VerdictUnknown: 1, runner.VerdictFail: 2, runner.VerdictRefused: 3}
	worst := runner.VerdictPass
	if refused > 0 {
		worst = runner.VerdictRefused
	}
	for _, r := range reps {
		sum.Pass += r.Summary.Pass
		sum.Fail += r.Summary.Fail
		sum.Unknown += r.Summary.Unknown
		sum.Refused += r.Summary.Refused
		if rank[r.Verdict] > rank[worst] {
			worst = r.Verdict
		}
	}
	if len(reps) == 0 && refused == 0 {
		worst = runner.VerdictUnknown
	}
	return worst, sum
}

// testFlags are what every file of one kmx test invocation is tested with.
type testFlags struct {
	rf       routeFlags
	examples []string
	trials   int
	from     string
	asJSON   bool
	binding  *localtools.Binding
	// showContent is --show-content: a failing example's workspace diff.
	showContent bool
	// keepWorkspace is --keep-workspace: keep each scratch copy.
	keepWorkspace bool
	// markdown is --format markdown: the pull-request summary, written
	// once everything ran.
	markdown bool
	// baseline is --baseline REV|none (a comparison).
	baseline optionalString
	// client carries compatible-route requests when set (tests: one that
	// trusts their TLS endpoint); nil dials directly.
	client *http.Client
	// hold keeps every file's run executing, for retention, until the
	// invocation ends (several files only).
	hold *runner.RunHolder
}

func runTest(ctx context.Context, env Env, args []string) error {
	if len(args) > 0 && args[0] == "explain" {
		return runTestExplain(ctx, env, args[1:])
	}
	fs := newFlagSet("test")
	var examples stringList
	var tf testFlags
	var junit, from, shard string
	var trials trialsFlag
	var format formatFlag
	fs.Var(&examples, "example", "example `ID` to test (repeatable); default all")
	fs.BoolVar(&tf.asJSON, "json", false, "print the safe JSON report (one per file, combined, for several files)")
	fs.StringVar(&junit, "junit", "", "also write a JUnit XML report to `PATH` (a testsuite per file)")
	fs.StringVar(&shard, "shard", "", "test only shard `K/N` of the files (stable across machines, for a CI matrix)")
	tf.rf.register(fs)
	tf.rf.registerConcurrency(fs)
	tf.rf.registerToolBindings(fs)
	fs.Var(&trials, "trials", fmt.Sprintf("run each example `N` times (1 to %d), each in a fresh Session; mixed outcomes are flaky", runner.MaxTrials))
	fs.StringVar(&from, "from", "", "re-grade: evaluate the current assertions against the answers journaled by `RUN`, with zero agent model calls")
	fs.Var(&tf.baseline, "baseline", "compare with the agent file's instructions at git revision `REV` (read with git, never checked out), or none for empty instructions")
	fs.BoolVar(&tf.showContent, "show-content", false, "show a failing example's workspace changes as a diff (content is withheld by default)")
	fs.BoolVar(&tf.keepWorkspace, "keep-workspace", false, "keep each example's scratch copy of its fixture workspace after the run, and name it")
	fs.Var(&format, "format", "output `FORMAT`: text, json (as --json) or markdown (a pull-request summary: IDs and verdicts only)")
	pos, err := parseInterspersed(fs, args, testUsage)
	if err != nil {
		return err
	}
	set, err := agentFiles("test", pos, shard, testUsage)
	if err != nil {
		return err
	}
	if junit != "" {
		// Before any file is read, any journal created or any request
		// sent: a report that cannot be written, or would replace a file
		// that is not kmx's report, is refused now, not after every
		// example has run.
		if err := checkJUnitPath(junit); err != nil {
			return err
		}
	}
	if from != "" && trials.n > 1 {
		return usagef(testUsage, "kmx test: %s; %s", runner.TrialsWithRegrade(problem.Flags), runner.TrialsWithRegradeNext(problem.Flags))
	}
	if err := tf.setFormat(format.v, set, from); err != nil {
		return err
	}
	tf.examples, tf.trials, tf.from = examples, trials.n, from
	if tf.binding, err = readToolBinding("test", tf.rf); err != nil {
		return err
	}
	// Read every file first: an unreadable one is a usage error, and
	// nothing runs.
	sources := make([][]byte, len(set.paths))
	for i, p := range set.paths {
		if sources[i], err = readAgentFile("test", p); err != nil {
			return err
		}
	}
	if tf.comparing() {
		return runCompare(ctx, env, tf, set.paths[0], sources[0], junit)
	}
	asJSON := tf.asJSON
	if !set.many {
		rep, runErr := testOne(ctx, env, tf, set.paths[0], sources[0])
		if junit != "" && rep != nil {
			if err := writeJUnit(junit, []*runner.Report{rep}); err != nil {
				return err
			}
		}
		if tf.markdown {
			return finishMarkdown(env, []*runner.Report{rep}, []error{runErr})
		}
		return finish(env, rep, runErr, asJSON)
	}
	// Each file is its own run: hold them all until the invocation ends,
	// so no file's run start deletes a run this invocation reports.
	tf.hold = &runner.RunHolder{}
	defer func() { _ = tf.hold.Release() }()
	var reps []*runner.Report
	var errs []error
	for i, p := range set.paths {
		if i > 0 && !asJSON {
			fmt.Fprintln(env.Stdout)
		}
		rep, runErr := testOne(ctx, env, tf, p, sources[i])
		if rep != nil {
			reps = append(reps, rep)
		}
		if r, ok := invocation.AsRefusal(runErr); ok && r.NoExamples && rep != nil {
			// One agent without examples does not fail a folder run: it
			// is reported as skipped, and the exit code is the others'.
			rep.Verdict = runner.VerdictSkipped
			if !asJSON {
				fmt.Fprintf(env.Stdout, "kmx test %s: no examples, skipped\n  next: %s\n", p, r.Next)
			}
			errs = append(errs, nil)
			continue
		}
		err := verdictError(env, rep, runErr, !asJSON)
		var failure *FailureError
		if err != nil && !asJSON && !errors.As(err, &failure) {
			// A fail or unknown verdict is on the file's own footer; a
			// refusal is said here, naming the file.
			if !strings.HasPrefix(err.Error(), p+" ") {
				err = fmt.Errorf("%s: %w", p, err)
			}
			printProblem(env, err)
		}
		errs = append(errs, err)
	}
	refusedFiles := 0
	for _, err := range errs {
		if err != nil && exitCode(err) == ExitRefusal {
			refusedFiles++
		}
	}
	verdict, total := overall(reps, refusedFiles)
	if !asJSON && len(set.paths) > 0 {
		// A file without examples is counted as such, so "3 files" never
		// reads as three files tested.
		files := plural(len(set.paths), "file")
		skipped := 0
		for _, r := range reps {
			if r.Verdict == runner.VerdictSkipped {
				skipped++
			}
		}
		if skipped > 0 {
			files += fmt.Sprintf(" (%d without examples, skipped)", skipped)
		}
		fmt.Fprintf(env.Stdout, "\n%s: %d pass, %d fail, %d unknown across %s · verdict %s\n",
			files, total.Pass, total.Fail, total.Unknown, plural(total.Pass+total.Fail+total.Unknown, "example"), paintVerdict(colourOn(env), verdict, verdict))
	}
	if !asJSON && len(set.paths) == 0 {
		fmt.Fprintf(env.Stdout, "kmx test: shard %s holds none of the files\n", shard)
	}
	if tf.markdown {
		if err := writeReportsMarkdown(env, reps); err != nil {
			return err
		}
	} else if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if reps == nil {
			reps = []*runner.Report{}
		}
		if err := enc.Encode(testedFiles{Schema: TestFilesSchema, Label: runner.Label, Verdict: verdict, Summary: total, Files: reps}); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	if junit != "" {
		if err := writeJUnit(junit, reps); err != nil {
			return err
		}
	}
	if worst := worstExit(errs); worst != nil {
		// Each file's problem was printed as it happened.
		return &FailureError{Msg: "kmx test: " + plural(len(set.paths), "file"), Exit: exitCode(worst)}
	}
	return nil
}

// testOne tests one file and prints its human output (header, a line per
// example, trials and re-grade lines, footer) unless asJSON.
func testOne(ctx context.Context, env Env, tf testFlags, path string, src []byte) (*runner.Report, error) {
	opts := runOptions(env, tf.rf)
	opts.Trials, opts.FromRun = tf.trials, tf.from
	opts.ToolBinding = tf.binding
	opts.HoldRuns = tf.hold
	opts.KeepWorkspace = tf.keepWorkspace
	on := colourOn(env)
	if !tf.asJSON {
		header := onceHeader(env, "test", path)
		opts.OnExample = func(ex runner.ExampleResult) {
			header()
			word := verdictWord(ex.Verdict)
			if f := trialsWord(ex); f != "" {
				word = f
			}
			fmt.Fprintf(env.Stdout, "  %s %-24s %s\n", paintVerdict(on, fmt.Sprintf("%-8s", word), word), ex.ID, runner.DecidingLine(ex))
			if line := evidenceLine(ex); line != "" {
				fmt.Fprintf(env.Stdout, "  %-8s %-24s %s\n", "", "", line)
			}
			if line := toolLine(ex); line != "" {
				fmt.Fprintf(env.Stdout, "  %-8s %-24s %s\n", "", "", line)
			}
			printWorkspace(env.Stdout, ex, tf.showContent)
			printTurns(env.Stdout, ex)
		}
	}
	rep, runErr := runner.Test(ctx, opts, invocation.Request{Path: path, Source: src, Examples: tf.examples})
	if runErr == nil && !tf.asJSON {
		printTrialsAndRegrade(env.Stdout, rep)
		printFooter(env.Stdout, rep, on)
	}
	return rep, runErr
}
