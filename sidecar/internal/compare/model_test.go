package compare

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the renderers' output")

var (
	fake  = Model{Route: "fake", Model: "fake"}
	other = Model{Route: "compatible", Model: "my-model"}
	agent = Agent{ID: "release-notes", Path: "agents/release-notes.agent.md", Revision: "2981c4a5"}
)

func intp(n int) *int { return &n }

// twoModels is two models on the same three examples; the second model
// fails one example and is flaky on another.
func twoModels() *Result {
	return Build(agent, []Run{
		{Column: Column{Model: fake, Side: SideCurrent, RunID: "20261201T100000.000000000Z-aaaaaaaa", JournalPath: "/state/a.db", Verdict: VerdictPass, DurationMs: 3},
			IDs:   []string{"weekly", "hotfix", "empty"},
			Cells: []Cell{{Verdict: VerdictPass, DurationMs: 0.4}, {Verdict: VerdictPass, DurationMs: 0.3}, {Verdict: VerdictPass, DurationMs: 0.2}}},
		{Column: Column{Model: other, Side: SideCurrent, RunID: "20261201T100000.000000000Z-bbbbbbbb", JournalPath: "/state/b.db", Verdict: VerdictFail, DurationMs: 2400, Trials: 3},
			IDs: []string{"weekly", "hotfix", "empty"},
			Cells: []Cell{
				{Verdict: VerdictFail, DurationMs: 1200.5, Tokens: intp(120), Trials: &Trials{N: 3, Fail: 3}},
				{Verdict: VerdictFail, DurationMs: 900, Trials: &Trials{N: 3, Pass: 2, Fail: 1, Flaky: true}},
				{Verdict: VerdictPass, DurationMs: 80, Tokens: intp(1), Trials: &Trials{N: 3, Pass: 3}},
			}},
	})
}

// againstBaseline is one model, current and baseline: one example
// regressed, one improved, one unchanged (fail to unknown).
func againstBaseline() *Result {
	base := &Baseline{Rev: "HEAD~1", Commit: "0123456789abcdef0123456789abcdef01234567", Path: "agents/release-notes.agent.md"}
	return Build(agent, []Run{
		{Column: Column{Model: fake, Side: SideCurrent, RunID: "20261201T100000.000000000Z-cccccccc", Verdict: VerdictFail},
			IDs:   []string{"weekly", "hotfix", "empty"},
			Cells: []Cell{{Verdict: VerdictFail, DurationMs: 0.4}, {Verdict: VerdictPass, DurationMs: 0.3}, {Verdict: VerdictUnknown, DurationMs: 0.2}}},
		{Column: Column{Model: fake, Side: SideBaseline, Baseline: base, RunID: "20261201T100000.000000000Z-dddddddd", Verdict: VerdictFail},
			IDs:   []string{"weekly", "hotfix", "empty"},
			Cells: []Cell{{Verdict: VerdictPass, DurationMs: 0.5}, {Verdict: VerdictFail, DurationMs: 0.6}, {Verdict: VerdictFail, DurationMs: 0.1}}},
	})
}

func TestBuildTwoModels(t *testing.T) {
	res := twoModels()
	if len(res.Rows) != 3 || len(res.Columns) != 2 {
		t.Fatalf("grid is %d×%d, want 3×2", len(res.Rows), len(res.Columns))
	}
	if got := res.Summary; got != (Summary{Pass: 4, Fail: 2, Flaky: 1}) {
		t.Errorf("summary %+v", got)
	}
	if res.Columns[1].Summary != (Summary{Pass: 1, Fail: 2, Flaky: 1}) {
		t.Errorf("column summary %+v", res.Columns[1].Summary)
	}
	if res.Verdict != VerdictFail || res.ExitCode() != ExitFailure {
		t.Errorf("verdict %s exit %d, want fail 1", res.Verdict, res.ExitCode())
	}
	if res.Changes != nil || res.Rows[0].Changes != nil {
		t.Errorf("changes without a baseline: %+v", res.Changes)
	}
	// weekly: pass and fail; hotfix: pass and flaky (a non-pass); empty:
	// both pass.
	for i, want := range []bool{true, true, false} {
		if got := res.Rows[i].Differs; got != want {
			t.Errorf("%s differs %v, want %v", res.Rows[i].ID, got, want)
		}
	}
	// A row's verdict is its worst cell's: hotfix's flaky cell is a fail.
	for i, want := range []string{VerdictFail, VerdictFail, VerdictPass} {
		if got := res.Rows[i].Verdict; got != want {
			t.Errorf("%s verdict %s, want %s", res.Rows[i].ID, got, want)
		}
	}
}

// TestDiffersIgnoresRefusedAndBaselineColumns: a refused model and a
// baseline column say nothing about whether the models that ran disagree.
func TestDiffersIgnoresRefusedAndBaselineColumns(t *testing.T) {
	res := Build(agent, []Run{
		{Column: Column{Model: fake, Side: SideCurrent}, IDs: []string{"a"}, Cells: []Cell{{Verdict: VerdictPass}}},
		{Column: Column{Model: other, Side: SideCurrent, Refusal: &Refusal{Message: "no endpoint"}}},
		{Column: Column{Model: fake, Side: SideBaseline, Baseline: &Baseline{Rev: BaselineNone}}, IDs: []string{"a"}, Cells: []Cell{{Verdict: VerdictFail}}},
	})
	if res.Rows[0].Differs {
		t.Errorf("one model that ran cannot disagree with itself: %+v", res.Rows[0])
	}
	// The baseline's fail does not count; the refused model does.
	if res.Rows[0].Verdict != VerdictRefused {
		t.Errorf("row verdict %s, want refused", res.Rows[0].Verdict)
	}
}

func TestExitCodeIsTheWorstCell(t *testing.T) {
	pass := func(m Model) Run {
		return Run{Column: Column{Model: m, Side: SideCurrent}, IDs: []string{"a"}, Cells: []Cell{{Verdict: VerdictPass}}}
	}
	unknown := Run{Column: Column{Model: other, Side: SideCurrent}, IDs: []string{"a"}, Cells: []Cell{{Verdict: VerdictUnknown}}}
	refused := Run{Column: Column{Model: other, Side: SideCurrent, Refusal: &Refusal{Message: "no endpoint"}}}
	failingBase := Run{Column: Column{Model: fake, Side: SideBaseline, Baseline: &Baseline{Rev: BaselineNone}}, IDs: []string{"a"}, Cells: []Cell{{Verdict: VerdictFail}}}
	refusedBase := Run{Column: Column{Model: fake, Side: SideBaseline, Baseline: &Baseline{Rev: BaselineNone}, Refusal: &Refusal{Message: "x"}}}
	for _, c := range []struct {
		name string
		runs []Run
		want int
	}{
		{"all pass", []Run{pass(fake), pass(other)}, ExitOK},
		{"one unknown", []Run{pass(fake), unknown}, ExitFailure},
		{"one refused model", []Run{pass(fake), refused}, ExitRefusal},
		{"a failing baseline is not tested", []Run{pass(fake), failingBase}, ExitOK},
		{"a refused baseline is no comparison", []Run{pass(fake), refusedBase}, ExitRefusal},
		{"a missing cell is never a pass", []Run{pass(fake), {Column: Column{Model: other, Side: SideCurrent}, IDs: []string{"b"}, Cells: []Cell{{Verdict: VerdictPass}}}}, ExitFailure},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Build(agent, c.runs)
			if got := res.ExitCode(); got != c.want {
				t.Errorf("exit %d, want %d (verdict %s, summary %+v)", got, c.want, res.Verdict, res.Summary)
			}
		})
	}
}

func TestRefusedColumnCellsAreRefused(t *testing.T) {
	res := Build(agent, []Run{
		{Column: Column{Model: fake, Side: SideCurrent}, IDs: []string{"a", "b"}, Cells: []Cell{{Verdict: VerdictPass}, {Verdict: VerdictPass}}},
		{Column: Column{Model: other, Side: SideCurrent, Refusal: &Refusal{Message: "no endpoint"}}},
	})
	for _, r := range res.Rows {
		if r.Cells[1].Verdict != VerdictRefused {
			t.Errorf("%s on the refused model is %s", r.ID, r.Cells[1].Verdict)
		}
	}
	if res.Summary.Refused != 2 || res.Verdict != VerdictRefused {
		t.Errorf("summary %+v verdict %s", res.Summary, res.Verdict)
	}
}

func TestChangeOf(t *testing.T) {
	for _, c := range []struct{ base, cur, want string }{
		{VerdictPass, VerdictFail, Regressed},
		{VerdictPass, VerdictUnknown, Regressed},
		{VerdictPass, VerdictRefused, Regressed},
		{VerdictFail, VerdictPass, Improved},
		{VerdictUnknown, VerdictPass, Improved},
		{VerdictPass, VerdictPass, Unchanged},
		{VerdictFail, VerdictUnknown, Unchanged},
		{VerdictUnknown, VerdictFail, Unchanged},
	} {
		if got := ChangeOf(c.base, c.cur); got != c.want {
			t.Errorf("ChangeOf(%s, %s) = %s, want %s", c.base, c.cur, got, c.want)
		}
	}
}

func TestBuildAgainstBaseline(t *testing.T) {
	res := againstBaseline()
	want := []string{Regressed, Improved, Unchanged}
	for i, r := range res.Rows {
		if len(r.Changes) != 1 || r.Changes[0].Change != want[i] {
			t.Errorf("%s: changes %+v, want %s", r.ID, r.Changes, want[i])
		}
	}
	if *res.Changes != (Changes{Regressed: 1, Improved: 1, Unchanged: 1}) {
		t.Errorf("changes %+v", *res.Changes)
	}
	// Only the current column counts toward the totals and the exit code.
	if res.Summary != (Summary{Pass: 1, Fail: 1, Unknown: 1}) || res.ExitCode() != ExitFailure {
		t.Errorf("summary %+v exit %d", res.Summary, res.ExitCode())
	}
}

// TestTwoModelsOnBaseline pairs each model with its own baseline.
func TestTwoModelsOnBaseline(t *testing.T) {
	none := &Baseline{Rev: BaselineNone}
	run := func(m Model, side string, v string) Run {
		c := Column{Model: m, Side: side}
		if side == SideBaseline {
			c.Baseline = none
		}
		return Run{Column: c, IDs: []string{"a"}, Cells: []Cell{{Verdict: v}}}
	}
	res := Build(agent, []Run{run(fake, SideCurrent, VerdictPass), run(other, SideCurrent, VerdictFail), run(fake, SideBaseline, VerdictFail), run(other, SideBaseline, VerdictPass)})
	ch := res.Rows[0].Changes
	if len(ch) != 2 || ch[0].Model != fake || ch[0].Change != Improved || ch[1].Model != other || ch[1].Change != Regressed {
		t.Fatalf("changes %+v", ch)
	}
}

func TestJSONDocument(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, twoModels()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema  string `json:"schema"`
		Label   string `json:"label"`
		Verdict string `json:"verdict"`
		Columns []struct {
			Model Model  `json:"model"`
			RunID string `json:"runId"`
		} `json:"columns"`
		Rows []struct {
			ID    string `json:"id"`
			Cells []struct {
				Verdict string  `json:"verdict"`
				Tokens  *int    `json:"tokens"`
				Trials  *Trials `json:"trials"`
			} `json:"cells"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "kmx.test.compare/v1" || doc.Label != "local preview" || doc.Verdict != "fail" {
		t.Errorf("schema %q label %q verdict %q", doc.Schema, doc.Label, doc.Verdict)
	}
	if doc.Columns[1].Model != other || doc.Columns[1].RunID == "" {
		t.Errorf("columns %+v", doc.Columns)
	}
	if c := doc.Rows[0].Cells[1]; c.Verdict != "fail" || c.Tokens == nil || *c.Tokens != 120 {
		t.Errorf("weekly on my-model: %+v", c)
	}
	if c := doc.Rows[0].Cells[0]; c.Tokens != nil || c.Trials != nil {
		t.Errorf("tokens or trials where none were reported: %+v", c)
	}
	if c := doc.Rows[1].Cells[1]; c.Trials == nil || !c.Trials.Flaky || c.Trials.Pass != 2 {
		t.Errorf("hotfix on my-model: %+v", c)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from its golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestTableGolden(t *testing.T) {
	for name, res := range map[string]*Result{"table-models.golden": twoModels(), "table-baseline.golden": againstBaseline()} {
		var b bytes.Buffer
		if err := WriteTable(&b, res); err != nil {
			t.Fatal(err)
		}
		golden(t, name, b.Bytes())
	}
}

func TestMarkdownGolden(t *testing.T) {
	for name, res := range map[string]*Result{"markdown-models.golden": twoModels(), "markdown-baseline.golden": againstBaseline()} {
		var b bytes.Buffer
		if err := WriteMarkdown(&b, res); err != nil {
			t.Fatal(err)
		}
		golden(t, name, b.Bytes())
	}
}

// TestMarkdownOrder: regressions come first, and every non-passing
// example is named once with its ID.
func TestMarkdownOrder(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, againstBaseline()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	reg, unk := strings.Index(md, "**Regressed"), strings.Index(md, "**Unknown")
	if reg < 0 || unk < 0 || reg > unk {
		t.Fatalf("regressions are not first:\n%s", md)
	}
	if strings.Contains(md, "**Failed") {
		t.Errorf("the regressed example is named twice:\n%s", md)
	}
	if !strings.Contains(md[unk:], "`empty`") {
		t.Errorf("the unknown example is not named:\n%s", md)
	}
}

// TestMarkdownOfEveryModelRefused: when no model ran (a refused
// --key-env over http, say), the summary names each refused model and
// never says every example passed, nor shows a grid with no row.
func TestMarkdownOfEveryModelRefused(t *testing.T) {
	res := Build(agent, []Run{
		{Column: Column{Model: Model{Route: "unresolved", Model: "careful"}, Side: SideCurrent, Verdict: VerdictRefused, Refusal: &Refusal{Message: "--endpoint: a credential is sent only over https://"}}},
		{Column: Column{Model: Model{Route: "unresolved", Model: "quick"}, Side: SideCurrent, Verdict: VerdictRefused, Refusal: &Refusal{Message: "--endpoint: a credential is sent only over https://"}}},
	})
	var b bytes.Buffer
	if err := WriteMarkdown(&b, res); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"**Refused before any example ran (2)**", "- careful (unresolved): refused, nothing ran (the job log says why)", "- quick (unresolved): refused"} {
		if !strings.Contains(md, want) {
			t.Errorf("the summary does not say %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "passed") || strings.Contains(md, "https://") || strings.Contains(md, "<details>") {
		t.Errorf("a summary of nothing run says something passed, or quotes the refusal:\n%s", md)
	}
	if res.Verdict != VerdictRefused {
		t.Errorf("verdict %s", res.Verdict)
	}
}

func TestMarkdownEscapesModelNames(t *testing.T) {
	res := Build(agent, []Run{{Column: Column{Model: Model{Route: "compatible", Model: "a|b`c\n## d"}, Side: SideCurrent}, IDs: []string{"x"}, Cells: []Cell{{Verdict: VerdictFail}}}})
	var b bytes.Buffer
	if err := WriteMarkdown(&b, res); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "## d") || strings.Contains(line, "a|b") || strings.Contains(line, "b`c") {
			t.Errorf("unescaped model name in %q", line)
		}
	}
}

// TestTurnRowsAreTheWorstCurrentTurn: a multi-turn example's turns are
// folded over the current columns as its row is: pass only when every
// model passed the turn, fail when one failed it, unknown when one did
// not send it (another did) and not run only when none sent it; the
// baseline's turns do not count.
func TestTurnRowsAreTheWorstCurrentTurn(t *testing.T) {
	turns := func(vs ...string) []TurnCell {
		var out []TurnCell
		for i, v := range vs {
			out = append(out, TurnCell{Turn: i + 1, Verdict: v})
		}
		return out
	}
	res := Build(agent, []Run{
		{Column: Column{Model: fake, Side: SideCurrent, Verdict: VerdictFail}, IDs: []string{"script", "one"},
			Cells: []Cell{{Verdict: VerdictFail, Turns: turns(VerdictPass, VerdictFail, VerdictNotRun, VerdictNotRun)}, {Verdict: VerdictPass}}},
		{Column: Column{Model: other, Side: SideCurrent, Verdict: VerdictPass}, IDs: []string{"script", "one"},
			Cells: []Cell{{Verdict: VerdictPass, Turns: turns(VerdictPass, VerdictPass, VerdictPass, VerdictNotRun)}, {Verdict: VerdictPass}}},
		{Column: Column{Model: other, Side: SideBaseline, Baseline: &Baseline{Rev: BaselineNone}, Verdict: VerdictFail}, IDs: []string{"script", "one"},
			Cells: []Cell{{Verdict: VerdictFail, Turns: turns(VerdictFail, VerdictNotRun, VerdictNotRun, VerdictNotRun)}, {Verdict: VerdictPass}}},
	})
	var got []string
	for _, tr := range res.Rows[0].Turns {
		got = append(got, tr.Verdict)
	}
	if want := []string{VerdictPass, VerdictFail, VerdictUnknown, VerdictNotRun}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("script's turns %v, want %v", got, want)
	}
	if res.Rows[1].Turns != nil {
		t.Errorf("a one-turn example has turns %+v", res.Rows[1].Turns)
	}
}
