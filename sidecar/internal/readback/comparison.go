package readback

import (
	"context"
	"fmt"
	"sort"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// ComparisonSchema versions the JSON of a ComparisonDiff (kmx journal diff
// RUN --json, for a run of a comparison). Fields are only added within v1.
const ComparisonSchema = "kmx.journal.comparison/v2"

// ComparisonDiff is a comparison's runs read back: every column (a model,
// or the baseline) against the first, each a RunDiff, so the answers of
// every example sit side by side with their verdicts and line diff. Like
// Diff it is offline: every run is replayed with zero model calls.
type ComparisonDiff struct {
	Schema    string `json:"schema"`
	Label     string `json:"label"`
	LiveCalls int    `json:"liveCalls"`
	// ID is the comparison's, as its runs' results record it; Columns how
	// many runs it had.
	ID      string `json:"id"`
	Columns int    `json:"columns"`
	// Runs are the retained runs of the comparison, by column (an empty
	// string for a column no longer retained).
	Runs []string `json:"runs"`
	// Diffs compare the first retained column with each other one.
	Diffs []*RunDiff `json:"diffs"`
	// Grid lays the same out as the compare view shows it: examples ×
	// retained columns.
	Grid *ComparisonGrid `json:"grid,omitempty"`
}

// ComparisonGrid is a comparison read back as a grid: a column per
// retained run, a row per example, each cell what that run recorded and
// answered, and the line diff of its answer against the first column's.
type ComparisonGrid struct {
	Columns []ComparisonColumn `json:"columns"`
	Rows    []ComparisonRow    `json:"rows"`
	// Differ counts the rows whose columns disagree on the verdict;
	// AnswersDiffer the rows whose answers differ.
	Differ        int `json:"differ"`
	AnswersDiffer int `json:"answersDiffer"`
}

// ComparisonColumn is one retained run of the comparison.
type ComparisonColumn struct {
	// Column is its place in the comparison (1-based), RunID its run.
	Column int    `json:"column"`
	RunID  string `json:"runId"`
	// Model is the model its turns sent to (empty when none was sent).
	Model journal.ModelIdentity `json:"model"`
	// Baseline is set on a baseline's column: where its instructions came from.
	Baseline *journal.ResultBaseline `json:"baseline,omitempty"`
	// Summary counts its cells by verdict.
	Summary ComparisonSummary `json:"summary"`
}

// ComparisonSummary counts a column's cells by verdict ("other" is any
// verdict but pass, fail and unknown, and a cell without one).
type ComparisonSummary struct {
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Unknown int `json:"unknown"`
	Other   int `json:"other"`
}

// ComparisonRow is one example across the columns.
type ComparisonRow struct {
	ID string `json:"id"`
	// Differs: the columns disagree on the verdict, or the example is
	// missing from one (what the comparison grid highlights);
	// AnswersDiffer: some column's answer differs from the first column's
	// (its Lines).
	Differs       bool             `json:"differs"`
	AnswersDiffer bool             `json:"answersDiffer,omitempty"`
	Cells         []ComparisonCell `json:"cells"`
}

// ComparisonCell is one column's side of an example.
type ComparisonCell struct {
	// Verdict is the run's recorded verdict; "flaky" when its trials
	// disagreed (Pass of Trials passed), "missing" when the run does not
	// hold the example, "" when it recorded none.
	Verdict string `json:"verdict,omitempty"`
	Trials  int    `json:"trials,omitempty"`
	Pass    int    `json:"pass,omitempty"`
	// Side is the run's turns of the example (models, replay states,
	// answers), absent when missing.
	Side *DiffSide `json:"side,omitempty"`
	// Lines is the line diff of this column's first answer against the
	// first column's, when both have one and they differ (never in the
	// first column).
	Lines []DiffLine `json:"lines,omitempty"`
}

// Cell verdicts the grid adds to the recorded ones.
const (
	CellFlaky   = "flaky"
	CellMissing = "missing"
)

// comparisonGrid lays out the retained columns (cols[i] the run of column
// kept[i]) from the diffs of the first against each other one.
func comparisonGrid(kept []int, runs map[int]string, diffs []*RunDiff) *ComparisonGrid {
	g := &ComparisonGrid{Columns: []ComparisonColumn{}, Rows: []ComparisonRow{}}
	var order []string
	seen := map[string]bool{}
	byID := make([]map[string]ExampleDiff, len(diffs))
	for k, d := range diffs {
		byID[k] = map[string]ExampleDiff{}
		for _, ex := range d.Examples {
			byID[k][ex.ID] = ex
			if !seen[ex.ID] {
				seen[ex.ID] = true
				order = append(order, ex.ID)
			}
		}
	}
	for i, c := range kept {
		col := ComparisonColumn{Column: c, RunID: runs[c]}
		switch {
		case len(diffs) == 0:
		case i == 0:
			col.Baseline = diffs[0].A.Baseline
		default:
			col.Baseline = diffs[i-1].B.Baseline
		}
		g.Columns = append(g.Columns, col)
	}
	for _, id := range order {
		row := ComparisonRow{ID: id, Cells: make([]ComparisonCell, len(kept))}
		for i := range kept {
			var side *DiffSide
			var lines []DiffLine
			if i == 0 {
				if ex, ok := byID[0][id]; ok {
					side = ex.A
				}
			} else if ex, ok := byID[i-1][id]; ok {
				side, lines = ex.B, ex.Lines
			}
			cell := cellOf(side)
			cell.Lines = lines
			row.Cells[i] = cell
			col := &g.Columns[i]
			if col.Model == (journal.ModelIdentity{}) && side != nil {
				for _, t := range side.Turns {
					if t.Model.Route != "" || t.Model.Model != "" {
						col.Model = journal.ModelIdentity{Route: t.Model.Route, Model: t.Model.Model}
						break
					}
				}
			}
			switch cell.Verdict {
			case "pass":
				col.Summary.Pass++
			case "fail":
				col.Summary.Fail++
			case "unknown":
				col.Summary.Unknown++
			default:
				col.Summary.Other++
			}
		}
		row.Differs, row.AnswersDiffer = rowDiffers(row.Cells)
		if row.Differs {
			g.Differ++
		}
		if row.AnswersDiffer {
			g.AnswersDiffer++
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

// cellOf is a column's cell for its side of an example.
func cellOf(side *DiffSide) ComparisonCell {
	if side == nil {
		return ComparisonCell{Verdict: CellMissing}
	}
	c := ComparisonCell{Side: side}
	vs := side.Verdicts
	if len(vs) == 0 {
		return c
	}
	c.Verdict = vs[0]
	for _, v := range vs {
		if v == "pass" {
			c.Pass++
		}
		if v != vs[0] {
			c.Verdict = CellFlaky
		}
	}
	if len(vs) > 1 {
		c.Trials = len(vs)
	} else {
		c.Pass = 0
	}
	return c
}

// rowDiffers says whether a verdict differs from the first column's (or a
// column lacks the example), and whether an answer differs (a line diff).
func rowDiffers(cells []ComparisonCell) (verdicts, answers bool) {
	for _, c := range cells {
		if c.Verdict != cells[0].Verdict || c.Verdict == CellMissing {
			verdicts = true
		}
		if len(c.Lines) > 0 {
			answers = true
		}
	}
	return verdicts, answers
}

// DiffComparison reads back the comparison run belongs to (kmx test
// --model A --model B, or --baseline): it finds the comparison's other
// runs among the retained runs of the same agent and compares the first
// column with every other, offline. A run that is no comparison's, or a
// comparison with fewer than two runs retained, is refused.
func DiffComparison(ctx context.Context, dir, run string) (*ComparisonDiff, error) {
	_, res, err := InspectWithResult(ctx, dir, run)
	if err != nil {
		return nil, err
	}
	if res == nil || res.Comparison == nil {
		return nil, invocation.Refuse("name two runs to compare them: kmx journal diff RUN_A RUN_B",
			"run %s is not part of a comparison (kmx test FILE --model A --model B, or --baseline REV)", run)
	}
	cmp := res.Comparison
	j, err := journal.Open(ctx, dir, run)
	if err != nil {
		return nil, readRefusal(ctx, run, err)
	}
	agent, agentPath := j.Meta().AgentID, j.Meta().AgentPath
	j.Close()
	infos, err := journal.ListAgent(dir, agent, agentPath)
	if err != nil {
		return nil, fmt.Errorf("list the runs of %s: %w", agent, err)
	}
	cols := map[int]string{cmp.Column: run}
	for _, info := range infos {
		if info.ID == run || info.Status != journal.StatusFinished {
			continue
		}
		if c, ok := comparisonOf(ctx, dir, info.ID); ok && c.ID == cmp.ID && c.Column >= 1 && c.Column <= cmp.Columns {
			cols[c.Column] = info.ID
		}
	}
	d := &ComparisonDiff{Schema: ComparisonSchema, Label: DiffLabel, ID: cmp.ID, Columns: cmp.Columns, Runs: make([]string, cmp.Columns), Diffs: []*RunDiff{}}
	var kept []int
	for c, id := range cols {
		d.Runs[c-1] = id
		kept = append(kept, c)
	}
	sort.Ints(kept)
	if len(kept) < 2 {
		return nil, invocation.Refuse("run the comparison again; kmx keeps the newest 20 runs",
			"only run %s of comparison %s is still retained, so there is nothing to compare it with", run, cmp.ID)
	}
	first := cols[kept[0]]
	for _, c := range kept[1:] {
		rd, err := Diff(ctx, dir, first, cols[c])
		if err != nil {
			return nil, err
		}
		d.LiveCalls += rd.LiveCalls
		d.Diffs = append(d.Diffs, rd)
	}
	d.Grid = comparisonGrid(kept, cols, d.Diffs)
	return d, nil
}

// comparisonOf reads a run's comparison from its result record, without
// replaying it (Diff replays the runs it compares); false when it has
// none or cannot be read.
func comparisonOf(ctx context.Context, dir, run string) (*journal.ResultComparison, bool) {
	j, err := journal.Open(ctx, dir, run)
	if err != nil {
		return nil, false
	}
	defer j.Close()
	recs, err := j.Records(ctx, journal.RunSession)
	if err != nil {
		return nil, false
	}
	for _, r := range recs {
		if r.Kind != journal.KindRunResult {
			continue
		}
		var res journal.RunResult
		if journal.Decode(r.Payload, &res) == nil && res.Comparison != nil {
			return res.Comparison, true
		}
	}
	return nil, false
}
