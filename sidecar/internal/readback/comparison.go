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
	agent := j.Meta().AgentID
	j.Close()
	infos, err := journal.ListAgent(dir, agent)
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
