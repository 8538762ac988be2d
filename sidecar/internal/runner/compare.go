package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/compare"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// MaxCompareModels bounds the models of one comparison: each is its own
// invocation and journal (two with a baseline), all on one pool.
const MaxCompareModels = 8

// Comparison is one file tested on several models and, optionally, on a
// baseline's instructions: each column its own invocation and journal.
type Comparison struct {
	// Models are the models asked for, in order; empty is the file's own.
	Models []string
	// Baseline, when set, adds a baseline column per model.
	Baseline *invocation.Baseline
}

// Compare runs every column of c at once on one pool of opts.Concurrency
// slots (opts.Model is replaced per column) and lays the reports out as
// the comparison grid. The reports are in column order (models, then
// each model's baseline). An invocation that failed without a refusal (a
// broken journal, say) is returned as the error once the others ran.
func Compare(ctx context.Context, opts Options, req invocation.Request, c Comparison) (*compare.Result, []*Report, error) {
	if err := c.check(); err != nil {
		return nil, nil, err
	}
	models := c.Models
	if len(models) == 0 {
		models = []string{""}
	}
	type column struct {
		model    string
		baseline *invocation.Baseline
	}
	var cols []column
	for _, m := range models {
		cols = append(cols, column{model: m})
	}
	if c.Baseline != nil {
		for _, m := range models {
			cols = append(cols, column{model: m, baseline: c.Baseline})
		}
	}
	id, err := comparisonID()
	if err != nil {
		return nil, nil, err
	}
	pool := NewPool(opts.Concurrency)
	// Each column is its own run: hold them all until the comparison
	// ends, so no column's run start deletes a run it reports.
	hold := &RunHolder{}
	defer func() { _ = hold.Release() }()
	reps := make([]*Report, len(cols))
	errs := make([]error, len(cols))
	var wg sync.WaitGroup
	for i, col := range cols {
		wg.Go(func() {
			o := opts
			if col.model != "" {
				o.Model = col.model
			}
			if col.model == route.Fake && len(models) > 1 {
				// The fake model beside real ones (the CLI's --model fake
				// --model NAME --endpoint URL, as the editor compares fake
				// with the models VS Code offers): the endpoints are for
				// the others, and the fake column stays in memory.
				o.StandingRoutes = true
			}
			o.Pool = pool
			o.HoldRuns = hold
			o.Comparison = &journal.ResultComparison{ID: id, Column: i + 1, Columns: len(cols)}
			r := req
			r.Baseline = col.baseline
			reps[i], errs[i] = Test(ctx, o, r)
		})
	}
	wg.Wait()
	var agent compare.Agent
	runs := make([]compare.Run, len(cols))
	for i, col := range cols {
		rep, err := reps[i], errs[i]
		if err != nil {
			if _, ok := invocation.AsRefusal(err); !ok || rep == nil {
				return nil, reps, fmt.Errorf("%s: %w", columnName(col.model, rep), err)
			}
		}
		if agent.Path == "" && col.baseline == nil {
			agent = compare.Agent{ID: rep.Agent.ID, Path: rep.Agent.Path, Revision: rep.Agent.Revision}
		}
		runs[i] = CompareRun(rep, col.model, col.baseline)
	}
	return compare.Build(agent, runs), reps, nil
}

// check refuses, before anything is created or sent, a comparison the
// fronts can be asked for but none can make: a model named twice (its two
// columns would be the same question) or more than MaxCompareModels.
func (c Comparison) check() error {
	if len(c.Models) > MaxCompareModels {
		return invocation.Refuse(fmt.Sprintf("compare at most %d models at a time; split the others into a second comparison", MaxCompareModels),
			"a comparison of %d models is too many", len(c.Models))
	}
	for i, m := range c.Models {
		if m == "" {
			return invocation.Refuse("name each model, or leave the models out to test on the file's own", "model %d of the comparison is empty", i+1)
		}
		for _, prev := range c.Models[:i] {
			if prev == m {
				return invocation.Refuse("name each model once", "the comparison names the model %s twice", columnName(m, nil))
			}
		}
	}
	return nil
}

// CompareRun is one invocation's report as a column of a comparison: its
// identity and each example's cell. model is the model as asked (named
// only when the route was never decided); baseline is the column's, if
// any. A plain Test is a one-column comparison (kmx test --format
// markdown).
func CompareRun(rep *Report, model string, baseline *invocation.Baseline) compare.Run {
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
		col.Model = compare.Model{Route: "unresolved", Model: columnName(model, rep)}
	}
	if b := baseline; b != nil {
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
		// The agent's tokens, only when the route reported usage for every
		// turn: a sum missing a turn would be a guess.
		if u := ex.Usage; u != nil && u.Unreported == 0 {
			tokens := u.TotalTokens
			cell.Tokens = &tokens
		}
		if t := ex.Trials; t != nil {
			cell.Trials = &compare.Trials{N: t.N, Pass: t.Pass, Fail: t.Fail, Unknown: t.Unknown, Flaky: t.Flaky}
		}
		for _, tr := range ex.Turns {
			tc := compare.TurnCell{Turn: tr.Turn, Verdict: tr.Verdict}
			if t := tr.Trials; t != nil {
				tc.Trials = &compare.Trials{N: t.N, Pass: t.Pass, Fail: t.Fail, Unknown: t.Unknown, Flaky: t.Flaky}
			}
			cell.Turns = append(cell.Turns, tc)
		}
		run.IDs = append(run.IDs, ex.ID)
		run.Cells = append(run.Cells, cell)
	}
	return run
}

// columnName names a column whose route was never decided: the model as
// asked, unless it looks like a credential.
func columnName(model string, rep *Report) string {
	if rep != nil && rep.Route.Agent.Model != "" {
		return rep.Route.Agent.Model
	}
	if model == "" {
		model = "the file's model"
	}
	if len(secrets.Scan(model)) > 0 || strings.ContainsAny(model, "\r\n") {
		return "(model name withheld)"
	}
	return model
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
