package compare

import "fmt"

// Schema versions the JSON document (kmx test --model A --model B --json).
// Within v1 fields are only added, never renamed or removed.
const Schema = "kmx.test.compare/v1"

// Label is on every result kmx produces.
const Label = "local preview"

// Cell verdicts: the runner's example verdicts, plus Missing for an example
// a column has no result for (never a pass).
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictUnknown = "unknown"
	VerdictRefused = "refused"
	VerdictMissing = "missing"
)

// Sides of a column: the agent file as it is now, or its baseline.
const (
	SideCurrent  = "current"
	SideBaseline = "baseline"
)

// Changes of an example against its baseline.
const (
	Improved  = "improved"
	Regressed = "regressed"
	Unchanged = "unchanged"
)

// BaselineNone is --baseline none: the examples with empty instructions.
const BaselineNone = "none"

// Exit codes, the CLI's: 0 every current cell passed, 1 a fail, unknown or
// missing cell, 2 a refusal.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitRefusal = 2
)

// Model is a column's route and model name.
type Model struct {
	Route string `json:"route"`
	Model string `json:"model"`
}

// String is the model as the CLI prints it everywhere: "NAME (route)".
func (m Model) String() string { return fmt.Sprintf("%s (%s)", m.Model, m.Route) }

// Agent names the agent file compared.
type Agent struct {
	ID   string `json:"id"`
	Path string `json:"path"`
	// Revision is the current file's revision (SHA-256 of its bytes).
	Revision string `json:"revision,omitempty"`
}

// Baseline is where a baseline column's instructions came from.
type Baseline struct {
	// Rev is the revision as given (--baseline REV), or "none".
	Rev string `json:"rev"`
	// Commit is the full commit Rev resolved to; absent for "none".
	Commit string `json:"commit,omitempty"`
	// Path is the file's path inside the repository at Commit.
	Path string `json:"path,omitempty"`
}

// Short is the baseline as a column header names it: "none", or the
// revision as given with its commit's first 12 digits.
func (b *Baseline) Short() string {
	if b == nil {
		return ""
	}
	if b.Rev == BaselineNone || b.Commit == "" {
		return b.Rev
	}
	c := b.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if c == b.Rev {
		return c
	}
	return fmt.Sprintf("%s (%s)", b.Rev, c)
}

// Refusal is why a column ran nothing, in the runner's words (which never
// hold a credential or content).
type Refusal struct {
	Message string `json:"message"`
	Next    string `json:"next,omitempty"`
}

// Trials are a cell's outcomes over N trials (--trials N, N > 1).
type Trials struct {
	N       int  `json:"n"`
	Pass    int  `json:"pass"`
	Fail    int  `json:"fail"`
	Unknown int  `json:"unknown"`
	Flaky   bool `json:"flaky"`
}

// Cell is one example on one column.
type Cell struct {
	Verdict    string  `json:"verdict"`
	DurationMs float64 `json:"durationMs"`
	// Trials is set when the example ran more than once.
	Trials *Trials `json:"trials,omitempty"`
	// Tokens is the tokens the route reported for the example, when it
	// reported any; absent otherwise (never a guess).
	Tokens *int `json:"tokens,omitempty"`
	// Turns are a multi-turn example's turns on this column, in order
	// (over trials, each folded over them); absent for a one-turn one.
	Turns []TurnCell `json:"turns,omitempty"`
}

// TurnCell is one turn of a multi-turn example on one column: the
// runner's turn verdict (pass, fail, unknown, refused, or "not run" when
// an earlier turn did not pass) and, over trials, its counts.
type TurnCell struct {
	Turn    int     `json:"turn"`
	Verdict string  `json:"verdict"`
	Trials  *Trials `json:"trials,omitempty"`
}

// VerdictNotRun is a turn no trial of the column sent, as the runner
// names it: never a pass.
const VerdictNotRun = "not run"

// TurnRow is one turn of a multi-turn example across the current columns:
// the worst of its cells (refused, fail, unknown, pass), pass only when
// every model passed it, "not run" when no model sent it. The Test
// Explorer marks the turn's item with it.
type TurnRow struct {
	Turn    int    `json:"turn"`
	Verdict string `json:"verdict"`
}

// Flaky reports whether the cell's trials had mixed outcomes.
func (c Cell) Flaky() bool { return c.Trials != nil && c.Trials.Flaky }

// Column is one invocation: a model on the current file or its baseline.
type Column struct {
	Model Model  `json:"model"`
	Side  string `json:"side"`
	// Baseline is set on baseline columns.
	Baseline *Baseline `json:"baseline,omitempty"`
	// RunID and JournalPath name the invocation's own journal; absent when
	// it was refused before one existed.
	RunID       string `json:"runId,omitempty"`
	JournalPath string `json:"journalPath,omitempty"`
	// Verdict is the invocation's file verdict.
	Verdict    string   `json:"verdict"`
	DurationMs float64  `json:"durationMs"`
	Trials     int      `json:"trials,omitempty"`
	Summary    Summary  `json:"summary"`
	Refusal    *Refusal `json:"refusal,omitempty"`
}

// Header is the column's name in the table and the Markdown.
func (c Column) Header() string {
	if c.Side == SideBaseline {
		return c.Model.String() + " · baseline " + c.Baseline.Short()
	}
	return c.Model.String()
}

// Change is one example's change on one model against its baseline.
type Change struct {
	Model  Model  `json:"model"`
	Change string `json:"change"`
	// From is the baseline's verdict, To the current one.
	From string `json:"from"`
	To   string `json:"to"`
}

// Row is one example across the columns.
type Row struct {
	ID string `json:"id"`
	// Cells line up with Result.Columns.
	Cells []Cell `json:"cells"`
	// Changes holds, per model compared with a baseline, this example's
	// change; absent without a baseline.
	Changes []Change `json:"changes,omitempty"`
	// Verdict is the example's worst current cell (refused, fail, unknown
	// or missing, pass), as Result.Verdict is the grid's: pass only when
	// every model passed it. The Test Explorer marks the example with it.
	Verdict string `json:"verdict"`
	// Differs: the models disagree on this example, some passing it and
	// some not (a flaky cell is a non-pass), among the current columns
	// that ran. What the editor's grid highlights; absent when they agree.
	Differs bool `json:"differs,omitempty"`
	// Turns are a multi-turn example's turns across the current columns;
	// absent for a one-turn example.
	Turns []TurnRow `json:"turns,omitempty"`
}

// Summary counts cells by verdict.
type Summary struct {
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Unknown int `json:"unknown"`
	Refused int `json:"refused"`
	Missing int `json:"missing,omitempty"`
	Flaky   int `json:"flaky"`
}

func (s *Summary) add(c Cell) {
	switch c.Verdict {
	case VerdictPass:
		s.Pass++
	case VerdictFail:
		s.Fail++
	case VerdictRefused:
		s.Refused++
	case VerdictMissing:
		s.Missing++
	default:
		s.Unknown++
	}
	if c.Flaky() {
		s.Flaky++
	}
}

// Changes counts examples by their change against a baseline.
type Changes struct {
	Improved  int `json:"improved"`
	Regressed int `json:"regressed"`
	Unchanged int `json:"unchanged"`
}

// Result is a whole comparison: kmx.test.compare/v1.
type Result struct {
	Schema  string   `json:"schema"`
	Label   string   `json:"label"`
	Agent   Agent    `json:"agent"`
	Columns []Column `json:"columns"`
	Rows    []Row    `json:"rows"`
	// Summary counts the current columns' cells: what the exit code and
	// the verdict are about. Each column has its own counts.
	Summary Summary `json:"summary"`
	// Changes is set when a baseline was compared.
	Changes *Changes `json:"changes,omitempty"`
	// Verdict is the worst current cell's: pass only when every example
	// passed on every model; refused when a column (a baseline's too)
	// ran nothing.
	Verdict string `json:"verdict"`
}

// Run is one column's outcome as the runner reported it: the column and
// each example's cell, in file order.
type Run struct {
	Column Column
	IDs    []string
	Cells  []Cell
}

// Build lays the runs out as a grid: a row per example (in the order the
// runs first name them), a cell per run, the changes of every model that
// has both a current and a baseline run, and the totals. A refused run's
// cells are refused; an example a run has no result for is missing.
func Build(agent Agent, runs []Run) *Result {
	res := &Result{Schema: Schema, Label: Label, Agent: agent, Columns: make([]Column, len(runs)), Rows: []Row{}}
	index := map[string]int{}
	for _, r := range runs {
		for _, id := range r.IDs {
			if _, ok := index[id]; !ok {
				index[id] = len(res.Rows)
				res.Rows = append(res.Rows, Row{ID: id})
			}
		}
	}
	for i := range res.Rows {
		res.Rows[i].Cells = make([]Cell, len(runs))
	}
	for c, r := range runs {
		col := r.Column
		col.Summary = Summary{}
		have := make([]bool, len(res.Rows))
		for k, id := range r.IDs {
			if k < len(r.Cells) {
				res.Rows[index[id]].Cells[c] = r.Cells[k]
				have[index[id]] = true
			}
		}
		for i := range res.Rows {
			if !have[i] {
				v := VerdictMissing
				if col.Refusal != nil {
					v = VerdictRefused
				}
				res.Rows[i].Cells[c] = Cell{Verdict: v}
			}
			col.Summary.add(res.Rows[i].Cells[c])
			if col.Side != SideBaseline {
				res.Summary.add(res.Rows[i].Cells[c])
			}
		}
		res.Columns[c] = col
	}
	res.changes()
	res.differs()
	res.rowVerdicts()
	res.Verdict = res.verdict()
	return res
}

// differs marks the rows whose current columns that ran (not refused)
// disagree about passing, the same notion of passing as ChangeOf.
func (res *Result) differs() {
	for i := range res.Rows {
		var passed, other bool
		for c, col := range res.Columns {
			if col.Side == SideBaseline || col.Refusal != nil {
				continue
			}
			if cell := res.Rows[i].Cells[c]; cell.Verdict == VerdictPass && !cell.Flaky() {
				passed = true
			} else {
				other = true
			}
		}
		res.Rows[i].Differs = passed && other
	}
}

// rowVerdicts gives each row the worst of its current cells.
func (res *Result) rowVerdicts() {
	for i := range res.Rows {
		var s Summary
		for c, col := range res.Columns {
			if col.Side != SideBaseline {
				s.add(res.Rows[i].Cells[c])
			}
		}
		res.Rows[i].Verdict = s.worst()
		res.Rows[i].Turns = res.turnRows(i)
	}
}

// turnRows folds row i's turns over its current columns: a turn's verdict
// is the worst of its cells, a column without the turn (refused, missing,
// or the example one-turn there) counting as unknown; "not run" only when
// every current column has it not run.
func (res *Result) turnRows(i int) []TurnRow {
	n := 0
	for _, c := range res.Rows[i].Cells {
		n = max(n, len(c.Turns))
	}
	if n == 0 {
		return nil
	}
	out := make([]TurnRow, n)
	for k := range out {
		var s Summary
		notRun, current := 0, 0
		for c, col := range res.Columns {
			if col.Side == SideBaseline {
				continue
			}
			current++
			cells := res.Rows[i].Cells[c].Turns
			switch {
			case k >= len(cells):
				s.add(Cell{Verdict: VerdictUnknown})
			case cells[k].Verdict == VerdictNotRun:
				notRun++
				s.add(Cell{Verdict: VerdictUnknown})
			default:
				s.add(Cell{Verdict: cells[k].Verdict})
			}
		}
		out[k] = TurnRow{Turn: k + 1, Verdict: s.worst()}
		if current > 0 && notRun == current {
			out[k].Verdict = VerdictNotRun
		}
	}
	return out
}

// worst is the verdict of cells counted in s: refused, fail, unknown (or
// missing), else pass.
func (s Summary) worst() string {
	switch {
	case s.Refused > 0:
		return VerdictRefused
	case s.Fail > 0:
		return VerdictFail
	case s.Unknown > 0 || s.Missing > 0:
		return VerdictUnknown
	}
	return VerdictPass
}

// changes pairs each model's current column with its baseline column.
func (res *Result) changes() {
	for cur, cc := range res.Columns {
		if cc.Side == SideBaseline {
			continue
		}
		base := -1
		for b, bc := range res.Columns {
			if bc.Side == SideBaseline && bc.Model == cc.Model {
				base = b
				break
			}
		}
		if base < 0 {
			continue
		}
		if res.Changes == nil {
			res.Changes = &Changes{}
		}
		for i := range res.Rows {
			from, to := res.Rows[i].Cells[base].Verdict, res.Rows[i].Cells[cur].Verdict
			ch := Change{Model: cc.Model, From: from, To: to, Change: ChangeOf(from, to)}
			switch ch.Change {
			case Improved:
				res.Changes.Improved++
			case Regressed:
				res.Changes.Regressed++
			default:
				res.Changes.Unchanged++
			}
			res.Rows[i].Changes = append(res.Rows[i].Changes, ch)
		}
	}
}

// ChangeOf is an example's change from its baseline verdict to its current
// one. Only passing counts: regressed when the baseline passed and the
// current file does not, improved when the current file passes and the
// baseline did not, unchanged otherwise (a fail that became unknown is no
// evidence either way, and a flaky example is a non-pass on its side).
func ChangeOf(baseline, current string) string {
	switch {
	case baseline == VerdictPass && current != VerdictPass:
		return Regressed
	case current == VerdictPass && baseline != VerdictPass:
		return Improved
	}
	return Unchanged
}

// verdict is the comparison's verdict: refused when any column ran
// nothing (the comparison asked for was not made), else the worst current
// cell's.
func (res *Result) verdict() string {
	for _, c := range res.Columns {
		if c.Refusal != nil {
			return VerdictRefused
		}
	}
	return res.Summary.worst()
}

// ExitCode is the worst cell's exit code: 0 when every example passed on
// every current column, 2 when any column was refused, else 1. A
// baseline's own fails and unknowns do not count: it is what the current
// file is measured against, not what is tested.
func (res *Result) ExitCode() int {
	switch res.Verdict {
	case VerdictPass:
		return ExitOK
	case VerdictRefused:
		return ExitRefusal
	}
	return ExitFailure
}
