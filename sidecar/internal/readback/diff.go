package readback

import (
	"context"
	"slices"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// DiffSchema versions the JSON of a RunDiff (kmx journal diff --json).
// Fields are only ever added within v1.
const DiffSchema = "kmx.journal.diff/v2"

// DiffLabel is on every RunDiff: it compares what two journals hold.
const DiffLabel = "local preview journal comparison; not a test result"

// Example statuses of a RunDiff.
const (
	DiffSame    = "same"    // same answers, same verdicts (where both have one)
	DiffChanged = "changed" // an answer, a turn state, a model or a verdict differs
	DiffOnlyA   = "only-a"  // the example is only in run A
	DiffOnlyB   = "only-b"  // the example is only in run B
)

// RunDiff compares two retained runs, offline: both are replayed with zero
// model calls (LiveCalls counts any attempt, and must be 0) and nothing is
// judged. Verdicts come from each run's journaled result record (a Test
// writes one); a run without one is compared on its answers only.
type RunDiff struct {
	Schema    string        `json:"schema"`
	Label     string        `json:"label"`
	LiveCalls int           `json:"liveCalls"`
	A         DiffRun       `json:"a"`
	B         DiffRun       `json:"b"`
	Summary   DiffSummary   `json:"summary"`
	Examples  []ExampleDiff `json:"examples"`
}

// DiffRun is one side's run identity and what it recorded.
type DiffRun struct {
	InspectedRun
	// Verdicts says whether the run recorded its verdicts; without them the
	// comparison is of answers only.
	Verdicts bool `json:"verdicts"`
	// SourceRun is set when the run was a re-grade of another run.
	SourceRun string `json:"sourceRun,omitempty"`
	// Trials is how many times the run ran each example (0: not recorded).
	Trials int `json:"trials,omitempty"`
	// Baseline is set when the run was a comparison's baseline: where its
	// instructions came from.
	Baseline *journal.ResultBaseline `json:"baseline,omitempty"`
}

// DiffSummary counts the examples by status.
type DiffSummary struct {
	Same    int `json:"same"`
	Changed int `json:"changed"`
	OnlyA   int `json:"onlyA"`
	OnlyB   int `json:"onlyB"`
}

// ExampleDiff is one example present in either run.
type ExampleDiff struct {
	ID     string    `json:"id"`
	Status string    `json:"status"`
	A      *DiffSide `json:"a,omitempty"`
	B      *DiffSide `json:"b,omitempty"`
	// Lines is the line diff of the first answer of each side, when both
	// have one and they differ.
	Lines []DiffLine `json:"lines,omitempty"`
}

// DiffSide is one run's agent turns of an example (one per trial).
type DiffSide struct {
	Turns []DiffTurn `json:"turns"`
	// Verdicts are the example's verdicts the run recorded, one per trial
	// (a multi-turn example's whole-script verdict); absent when it
	// recorded none.
	Verdicts []string `json:"verdicts,omitempty"`
}

// DiffTurn is one agent turn: its model, replay state, answer (verified
// turns only), and the verdict and duration the run recorded for it.
type DiffTurn struct {
	Model      journal.ModelIdentity `json:"model"`
	State      string                `json:"state"`
	Answer     *string               `json:"answer,omitempty"`
	Verdict    string                `json:"verdict,omitempty"`
	DurationMs *float64              `json:"durationMs,omitempty"`
}

// DiffLine is one line of a line diff: op is "=" (both), "-" (A only) or
// "+" (B only).
type DiffLine struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// Diff replays runs a and b of the journal folder dir with zero model calls
// and compares them example by example. Errors are Inspect's refusals.
func Diff(ctx context.Context, dir, a, b string) (*RunDiff, error) {
	ia, ra, err := InspectWithResult(ctx, dir, a)
	if err != nil {
		return nil, err
	}
	ib, rb, err := InspectWithResult(ctx, dir, b)
	if err != nil {
		return nil, err
	}
	d := &RunDiff{Schema: DiffSchema, Label: DiffLabel, LiveCalls: ia.LiveCalls + ib.LiveCalls, Examples: []ExampleDiff{}}
	d.A, d.B = diffRun(ia, ra), diffRun(ib, rb)
	sa, oa := sides(ia, ra)
	sb, ob := sides(ib, rb)
	ids := oa
	for _, id := range ob {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		ed := ExampleDiff{ID: id, A: sa[id], B: sb[id]}
		switch {
		case ed.B == nil:
			ed.Status = DiffOnlyA
			d.Summary.OnlyA++
		case ed.A == nil:
			ed.Status = DiffOnlyB
			d.Summary.OnlyB++
		case sameSide(ed.A, ed.B):
			ed.Status = DiffSame
			d.Summary.Same++
		default:
			ed.Status = DiffChanged
			d.Summary.Changed++
		}
		if ed.A != nil && ed.B != nil {
			xa, xb := firstAnswer(ed.A), firstAnswer(ed.B)
			if xa != nil && xb != nil && *xa != *xb {
				ed.Lines = LineDiff(*xa, *xb)
			}
		}
		d.Examples = append(d.Examples, ed)
	}
	return d, nil
}

func diffRun(in *Inspection, r *journal.RunResult) DiffRun {
	dr := DiffRun{InspectedRun: in.Run}
	if r != nil {
		dr.Verdicts, dr.SourceRun, dr.Trials, dr.Baseline = true, r.SourceRun, r.Trials, r.Baseline
	}
	return dr
}

// sides groups a run's agent turns by example. With a result record the
// turns follow it (file order, then trial order), each matched to its
// recorded verdict by session ID; turns it does not name follow in journal
// order. The second value is the example order.
func sides(in *Inspection, r *journal.RunResult) (map[string]*DiffSide, []string) {
	out := map[string]*DiffSide{}
	var order []string
	side := func(id string) *DiffSide {
		s := out[id]
		if s == nil {
			s = &DiffSide{}
			out[id] = s
			order = append(order, id)
		}
		return s
	}
	used := map[string]bool{}
	bySession := map[string]InspectedTurn{}
	for _, t := range in.Turns {
		if t.Purpose == invocation.PurposeAgent && t.Turn == 1 {
			bySession[t.SessionID] = t
		}
	}
	if r != nil {
		for _, re := range r.Examples {
			s := side(re.ID)
			s.Verdicts = append(s.Verdicts, re.Verdict)
			if len(re.Turns) > 0 {
				// A multi-turn example: a row per turn, each matched to
				// its own session (named agentfile.TurnName).
				for _, rt := range re.Turns {
					dt := DiffTurn{State: "not sent", Verdict: rt.Verdict}
					if t, ok := bySession[rt.SessionID]; ok && rt.SessionID != "" && !used[rt.SessionID] && t.Example == agentfile.TurnName(re.ID, rt.Turn) {
						used[rt.SessionID] = true
						dt.Model, dt.State, dt.Answer, dt.DurationMs = t.Model, t.State, t.Answer, t.DurationMs
					}
					s.Turns = append(s.Turns, dt)
				}
				continue
			}
			dur := re.DurationMs
			dt := DiffTurn{State: "not sent", Verdict: re.Verdict, DurationMs: &dur}
			if t, ok := bySession[re.SessionID]; ok && re.SessionID != "" && !used[re.SessionID] && t.Example == re.ID {
				used[re.SessionID] = true
				dt.Model, dt.State, dt.Answer = t.Model, t.State, t.Answer
			}
			s.Turns = append(s.Turns, dt)
		}
	}
	for _, t := range in.Turns {
		if t.Purpose != invocation.PurposeAgent || used[t.SessionID] {
			continue
		}
		s := side(t.Example)
		s.Turns = append(s.Turns, DiffTurn{Model: t.Model, State: t.State, Answer: t.Answer})
	}
	return out, order
}

func firstAnswer(s *DiffSide) *string {
	for _, t := range s.Turns {
		if t.Answer != nil {
			return t.Answer
		}
	}
	return nil
}

// sameSide: the same turns one for one; or, when one side ran the example
// more times than the other (a trials run against a single run), every
// turn of both sides the same as each other. A trials run whose every
// trial gives the single run's answer and verdict is the same; one whose
// trials differ among themselves (flaky) is changed.
func sameSide(a, b *DiffSide) bool {
	if len(a.Turns) == len(b.Turns) {
		for i := range a.Turns {
			if !sameTurn(a.Turns[i], b.Turns[i]) {
				return false
			}
		}
		return true
	}
	// Trials against fewer trials: every trial's script (one turn, or a
	// multi-turn example's turns) the same as the first one's.
	p := a.ScriptTurns()
	if len(a.Turns) == 0 || len(b.Turns) == 0 || p != b.ScriptTurns() {
		return false
	}
	first := a.Turns[:p]
	rest := append(a.Turns[p:len(a.Turns):len(a.Turns)], b.Turns...)
	for i, t := range rest {
		if !sameTurn(first[i%p], t) {
			return false
		}
	}
	return true
}

// ScriptTurns is how many of the side's turns one trial holds: a
// multi-turn example's turns (every one of them, those not run included,
// as the run's result recorded them), else 1.
func (s *DiffSide) ScriptTurns() int {
	if n := len(s.Verdicts); n > 0 && len(s.Turns) > n && len(s.Turns)%n == 0 {
		return len(s.Turns) / n
	}
	return 1
}

// sameTurn: the same model, state and answer, and the same verdict where
// both recorded one.
func sameTurn(x, y DiffTurn) bool {
	if x.Model != y.Model || x.State != y.State || (x.Answer == nil) != (y.Answer == nil) {
		return false
	}
	if x.Answer != nil && *x.Answer != *y.Answer {
		return false
	}
	return x.Verdict == "" || y.Verdict == "" || x.Verdict == y.Verdict
}

// LineDiff is the shortest line diff of a and b (longest common
// subsequence of lines), in order. Answers are small; this is quadratic in
// their line counts.
func LineDiff(a, b string) []DiffLine {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	n, m := len(la), len(lb)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for k := m - 1; k >= 0; k-- {
			if la[i] == lb[k] {
				lcs[i][k] = lcs[i+1][k+1] + 1
			} else {
				lcs[i][k] = max(lcs[i+1][k], lcs[i][k+1])
			}
		}
	}
	var out []DiffLine
	i, k := 0, 0
	for i < n && k < m {
		switch {
		case la[i] == lb[k]:
			out = append(out, DiffLine{"=", la[i]})
			i++
			k++
		case lcs[i+1][k] >= lcs[i][k+1]:
			out = append(out, DiffLine{"-", la[i]})
			i++
		default:
			out = append(out, DiffLine{"+", lb[k]})
			k++
		}
	}
	for ; i < n; i++ {
		out = append(out, DiffLine{"-", la[i]})
	}
	for ; k < m; k++ {
		out = append(out, DiffLine{"+", lb[k]})
	}
	return out
}
