package cli

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/compare"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
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

// compareColumn is one invocation of a comparison: a model on the current
// file, or on its baseline.
type compareColumn struct {
	model    string // as asked; "" is the file's own (or the default)
	baseline *invocation.Baseline
}

// runCompare tests one file on every model asked for, and on its baseline
// when one is asked for: each column its own invocation and journal, all
// of them on one pool of --concurrency slots. The baseline is read (and
// refused) before anything is created or sent. It prints the grid (or the
// JSON or Markdown) and returns the worst cell's exit code.
func runCompare(ctx context.Context, env Env, tf testFlags, path string, src []byte, junit string) error {
	var base *invocation.Baseline
	if tf.baseline.set {
		b, err := readBaseline(ctx, path, src, tf.baseline.value)
		if err != nil {
			return err
		}
		base = b
	}
	models := tf.rf.models
	if len(models) == 0 {
		models = []string{""}
	}
	var cols []compareColumn
	for _, m := range models {
		cols = append(cols, compareColumn{model: m})
	}
	if base != nil {
		for _, m := range models {
			cols = append(cols, compareColumn{model: m, baseline: base})
		}
	}
	pool := runner.NewPool(tf.rf.concurrency.n)
	id, err := comparisonID()
	if err != nil {
		return err
	}
	reps := make([]*runner.Report, len(cols))
	errs := make([]error, len(cols))
	// Each column is its own run: hold them all until the comparison ends,
	// so no column's run start deletes a run it reports.
	hold := &runner.RunHolder{}
	defer func() { _ = hold.Release() }()
	var wg sync.WaitGroup
	for i, c := range cols {
		wg.Go(func() {
			rf := tf.rf
			if c.model != "" {
				rf.model = c.model
			}
			opts := runOptions(env, rf)
			opts.Trials = tf.trials
			opts.ToolBinding = tf.binding
			opts.Pool = pool
			opts.HoldRuns = hold
			opts.HTTPClient = tf.client
			opts.Comparison = &journal.ResultComparison{ID: id, Column: i + 1, Columns: len(cols)}
			reps[i], errs[i] = runner.Test(ctx, opts, invocation.Request{Path: path, Source: src, Examples: tf.examples, Baseline: c.baseline})
		})
	}
	wg.Wait()
	res, err := compareResult(cols, reps, errs)
	if err != nil {
		return err
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

// readBaseline is --baseline REV or none: the instructions the baseline
// columns send instead of the file's, and where they came from. Git is
// read with plumbing only; every refusal comes before anything is created
// or sent.
func readBaseline(ctx context.Context, path string, src []byte, rev string) (*invocation.Baseline, error) {
	agentPath, examplesPath, examplesSrc, err := pairOf(path, src)
	if err != nil {
		return nil, err
	}
	if rev == compare.BaselineNone {
		sum := sha256.Sum256(append([]byte("kmx baseline none\x00"), src...))
		return &invocation.Baseline{Rev: compare.BaselineNone, Revision: hex.EncodeToString(sum[:])}, nil
	}
	at, err := compare.ReadAtRevision(ctx, agentPath, rev)
	if err != nil {
		return nil, revisionRefusal(err)
	}
	instructions, err := compare.InstructionsAt(agentPath, at.Source, examplesPath, examplesSrc, rev)
	if err != nil {
		return nil, revisionRefusal(err)
	}
	revision := agentfile.PairRevision(at.Source, examplesSrc)
	if examplesPath == "" {
		sum := sha256.Sum256(at.Source)
		revision = hex.EncodeToString(sum[:])
	}
	return &invocation.Baseline{Rev: rev, Commit: at.Baseline.Commit, Path: at.Baseline.Path, Instructions: instructions, Revision: revision}, nil
}

// pairOf names the agent file of path and, when its examples live beside
// it, the examples file and its text (the current examples: a baseline
// changes only the instructions).
func pairOf(path string, src []byte) (agentPath, examplesPath string, examplesSrc []byte, err error) {
	if a := agentfile.AgentPathOf(path); a != "" {
		return a, path, src, nil
	}
	sibling := agentfile.SiblingExamplesPath(path)
	if sibling == "" {
		return path, "", nil, nil
	}
	b, err := invocation.ReadPairFile(sibling)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return path, "", nil, nil
	case err != nil:
		return "", "", nil, usagef("check the examples file beside the agent file", "kmx test: cannot read %s: %v", sibling, unwrapPathError(err))
	}
	return path, sibling, b, nil
}

func revisionRefusal(err error) error {
	var re *compare.RevisionError
	if errors.As(err, &re) {
		return &RefusalError{Msg: "kmx test: " + re.Msg, Next: re.Next}
	}
	return fmt.Errorf("kmx test: %w", err)
}

// compareResult lays the columns' reports out as the comparison grid. An
// invocation that failed without a report (not a refusal: a broken
// journal, say) is returned as the command's error, after the others ran.
func compareResult(cols []compareColumn, reps []*runner.Report, errs []error) (*compare.Result, error) {
	var agent compare.Agent
	runs := make([]compare.Run, len(cols))
	for i, c := range cols {
		rep, err := reps[i], errs[i]
		if err != nil {
			if _, ok := invocation.AsRefusal(err); !ok || rep == nil {
				return nil, &RefusalError{Msg: fmt.Sprintf("kmx test: %s: %v", columnName(c, rep), err), Next: "this is not a verdict; nothing was reported as passing"}
			}
		}
		if agent.Path == "" && c.baseline == nil {
			agent = compare.Agent{ID: rep.Agent.ID, Path: rep.Agent.Path, Revision: rep.Agent.Revision}
		}
		runs[i] = compareRun(c, rep)
	}
	return compare.Build(agent, runs), nil
}

// compareRun is one column: its identity and each example's cell.
func compareRun(c compareColumn, rep *runner.Report) compare.Run {
	col := compare.Column{
		Model:       compare.Model{Route: rep.Route.Agent.Route, Model: rep.Route.Agent.Model},
		Side:        compare.SideCurrent,
		RunID:       rep.RunID,
		JournalPath: rep.JournalPath,
		Verdict:     rep.Verdict,
		DurationMs:  rep.DurationMs,
		Trials:      rep.Trials,
	}
	if col.Model.Model == "" {
		// Refused before its route was decided: named as asked.
		col.Model = compare.Model{Route: "unresolved", Model: columnName(c, rep)}
	}
	if b := c.baseline; b != nil {
		col.Side = compare.SideBaseline
		col.Baseline = &compare.Baseline{Rev: b.Rev, Commit: b.Commit, Path: b.Path}
	}
	if r := rep.Refusal; r != nil {
		col.Refusal = &compare.Refusal{Message: r.Message, Next: r.Next}
	}
	run := compare.Run{Column: col}
	if col.Refusal != nil {
		return run
	}
	for _, ex := range rep.Examples {
		if ex.AdHoc {
			continue
		}
		cell := compare.Cell{Verdict: ex.Verdict, DurationMs: ex.DurationMs}
		if t := ex.Trials; t != nil {
			cell.Trials = &compare.Trials{N: t.N, Pass: t.Pass, Fail: t.Fail, Unknown: t.Unknown, Flaky: t.Flaky}
		}
		run.IDs = append(run.IDs, ex.ID)
		run.Cells = append(run.Cells, cell)
	}
	return run
}

// columnName names a column whose route was never decided: the model as
// asked, unless it looks like a credential (then only its position).
func columnName(c compareColumn, rep *runner.Report) string {
	if rep != nil && rep.Route.Agent.Model != "" {
		return rep.Route.Agent.Model
	}
	name := c.model
	if name == "" {
		name = "the file's model"
	}
	if len(secrets.Scan(name)) > 0 || strings.ContainsAny(name, "\r\n") {
		return "(model name withheld)"
	}
	return name
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
		res := compare.Build(compare.Agent{ID: rep.Agent.ID, Path: rep.Agent.Path, Revision: rep.Agent.Revision}, []compare.Run{compareRun(compareColumn{}, rep)})
		if err := compare.WriteMarkdown(env.Stdout, res); err != nil {
			return fmt.Errorf("write the summary: %w", err)
		}
	}
	return nil
}

// comparisonID names one comparison in its runs' results: the time to the
// nanosecond and 8 random hex digits, like a run ID.
func comparisonID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("name the comparison: %w", err)
	}
	return "cmp-" + time.Now().UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(b[:]), nil
}
