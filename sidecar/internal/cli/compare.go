package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/compare"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// Output formats of kmx test (--format).
const (
	formatText     = "text"
	formatJSON     = "json"
	formatMarkdown = "markdown"
)

// formatFlag is --format text|json|markdown.
type formatFlag struct{ v string }

func (f *formatFlag) String() string {
	if f == nil || f.v == "" {
		return formatText
	}
	return f.v
}

func (f *formatFlag) Set(v string) error {
	switch v {
	case formatText, formatJSON, formatMarkdown:
		f.v = v
		return nil
	}
	return fmt.Errorf("give text, json or markdown")
}

// comparing says whether a kmx test command line is a comparison: several
// models, or a baseline.
func (tf *testFlags) comparing() bool { return len(tf.rf.models) > 1 || tf.baseline.set }

// runCompare tests one file on every model asked for, and on its baseline
// when one is asked for: each column its own invocation and journal, all
// of them on one pool of --concurrency slots (runner.Compare). The
// baseline is read (and refused) before anything is created or sent. It
// prints the grid (or the JSON or Markdown) and returns the worst cell's
// exit code.
func runCompare(ctx context.Context, env Env, tf testFlags, path string, src []byte, junit string) error {
	c := runner.Comparison{Models: tf.rf.models}
	if tf.baseline.set {
		b, err := runner.ReadBaseline(ctx, path, src, tf.baseline.value, nil)
		if err != nil {
			return revisionRefusal(err)
		}
		c.Baseline = b
	}
	opts := runOptions(env, tf.rf)
	opts.Trials = tf.trials
	opts.ToolBinding = tf.binding
	opts.HTTPClient = tf.client
	res, reps, err := runner.Compare(ctx, opts, invocation.Request{Path: path, Source: src, Examples: tf.examples}, c)
	if r, ok := invocation.AsRefusal(err); ok {
		return &RefusalError{Msg: "kmx test: " + r.Msg, Next: r.Next}
	}
	if err != nil {
		return &RefusalError{Msg: "kmx test: " + err.Error(), Next: "this is not a verdict; nothing was reported as passing"}
	}
	switch {
	case tf.markdown:
		err = compare.WriteMarkdown(env.Stdout, res)
	case tf.asJSON:
		err = compare.WriteJSON(env.Stdout, res)
	default:
		err = compare.WriteTable(env.Stdout, res)
	}
	if err != nil {
		return fmt.Errorf("write the comparison: %w", err)
	}
	if junit != "" {
		if err := writeCompareJUnit(junit, res, reps); err != nil {
			return err
		}
	}
	if code := res.ExitCode(); code != compare.ExitOK {
		// The grid (or document) said everything, refusals included.
		return &FailureError{Msg: "kmx test: verdict " + res.Verdict, Exit: code}
	}
	return nil
}

func revisionRefusal(err error) error {
	var re *compare.RevisionError
	if errors.As(err, &re) {
		return &RefusalError{Msg: "kmx test: " + re.Msg, Next: re.Next}
	}
	return fmt.Errorf("kmx test: %w", err)
}

// writeCompareJUnit writes a testsuite per column, named by the file and
// the column (model, and baseline), so CI shows each model's examples.
func writeCompareJUnit(path string, res *compare.Result, reps []*runner.Report) error {
	var doc junitSuites
	for i, rep := range reps {
		suite := junitSuiteOf(rep)
		col := res.Columns[i]
		suite.Name = fmt.Sprintf("%s [%s]", rep.Agent.Path, col.Header())
		if col.Baseline != nil {
			suite.Props = append(suite.Props, junitProp{"baseline", col.Baseline.Rev}, junitProp{"baselineCommit", col.Baseline.Commit})
		}
		doc.Suites = append(doc.Suites, suite)
	}
	return writeXML(path, doc)
}

// setFormat checks --format against --json and the comparison flags, and
// sets what the output is. A comparison is of one file, tested afresh.
func (tf *testFlags) setFormat(format string, set fileSet, from string) error {
	switch {
	case tf.asJSON && format != "" && format != formatJSON:
		return usagef("give either --json or --format "+format, "kmx test: --json and --format %s ask for two different outputs", format)
	case format == formatJSON:
		tf.asJSON = true
	case format == formatMarkdown:
		// Written once every file ran; no line per example meanwhile.
		tf.markdown, tf.asJSON = true, true
	}
	if !tf.comparing() {
		return nil
	}
	switch {
	case set.many:
		return usagef("compare one agent file at a time: kmx test FILE --model A --model B [--baseline REV]", "kmx test: a comparison (--model twice or --baseline) takes one agent file, not a folder, several files or a shard")
	case from != "":
		return usagef("drop --from to compare fresh runs, or drop the comparison to re-grade", "kmx test: --from re-grades one run's answers; it cannot be combined with --model twice or --baseline")
	}
	return nil
}

// finishMarkdown writes the Markdown summary of one file's run and maps
// its outcome to the exit code, as finish does for JSON.
func finishMarkdown(env Env, reps []*runner.Report, errs []error) error {
	if reps[0] != nil {
		if err := writeReportsMarkdown(env, reps); err != nil {
			return err
		}
	}
	return verdictError(env, reps[0], errs[0], false)
}

// writeReportsMarkdown writes a Markdown summary per file tested: each a
// one-column comparison (its model), in the same words as a comparison.
func writeReportsMarkdown(env Env, reps []*runner.Report) error {
	if len(reps) == 0 {
		_, err := fmt.Fprintf(env.Stdout, "### kmx test: no agent file to test (%s)\n", runner.Label)
		return err
	}
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(env.Stdout)
		}
		res := compare.Build(compare.Agent{ID: rep.Agent.ID, Path: rep.Agent.Path, Revision: rep.Agent.Revision}, []compare.Run{runner.CompareRun(rep, "", nil)})
		if err := compare.WriteMarkdown(env.Stdout, res); err != nil {
			return fmt.Errorf("write the summary: %w", err)
		}
	}
	return nil
}
