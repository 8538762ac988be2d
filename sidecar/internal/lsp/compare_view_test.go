package lsp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// TestDiffRunsReadsAComparisonBack: the replay panel's compare view, asked
// on one column's run of a Compare Models comparison, gets every column
// read back from the journals as a grid (examples × models, the recorded
// verdicts, each answer and its line diff against the first column's)
// with zero model calls: the editor is never asked again.
func TestDiffRunsReadsAComparisonBack(t *testing.T) {
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT, editorSonnet}}
	e.reply = func(_ context.Context, _ int, p route.EditorSendParams) (any, error) {
		in := p.Messages[1].Content
		if p.Model.ID == editorSonnet.ID && in == "Grace" {
			return route.EditorSendResult{Model: p.Model, Text: "Notes for Grace"}, nil
		}
		return route.EditorSendResult{Model: p.Model, Text: "Release notes: " + in}, nil
	}
	c := startEditor(t, e)
	path := writeAgent(t, "notes.agent.md", editorAgent)
	uri := fileURI(path)
	c.open(uri, 1, editorAgent)
	var res lsp.CompareModelsResult
	c.mustCall(lsp.MethodCompareModels, lsp.CompareModelsParams{URI: uri, Models: []string{"GPT-4.1", "Claude Sonnet 4.6 (copilot)"}}, &res)
	if res.Comparison == nil {
		t.Fatalf("refused: %+v", res.Refusal)
	}
	_, sends := e.counts()

	var d lsp.DiffRunsResult
	c.mustCall(lsp.MethodDiffRuns, lsp.DiffRunsParams{RunID: res.Comparison.Columns[1].RunID, Comparison: true}, &d)
	cd := d.Comparison
	if d.Diff != nil || cd == nil || cd.Schema != readback.ComparisonSchema || cd.LiveCalls != 0 || cd.Grid == nil {
		t.Fatalf("answer %+v", d)
	}
	g := cd.Grid
	if len(g.Columns) != 2 || g.Columns[0].RunID != res.Comparison.Columns[0].RunID || g.Columns[1].RunID != res.Comparison.Columns[1].RunID ||
		g.Columns[0].Model.Model != "copilot/gpt-4.1" || g.Columns[1].Model.Model != "copilot/claude-sonnet-4.6" {
		t.Fatalf("columns %+v", g.Columns)
	}
	if g.Columns[0].Summary != (readback.ComparisonSummary{Pass: 2}) || g.Columns[1].Summary != (readback.ComparisonSummary{Pass: 1, Fail: 1}) {
		t.Errorf("summaries %+v %+v", g.Columns[0].Summary, g.Columns[1].Summary)
	}
	if len(g.Rows) != 2 || g.Rows[0].ID != "first" || g.Rows[1].ID != "second" || g.Differ != 1 || g.AnswersDiffer != 1 ||
		g.Rows[0].Differs || g.Rows[0].AnswersDiffer || !g.Rows[1].Differs || !g.Rows[1].AnswersDiffer {
		t.Fatalf("rows %+v", g.Rows)
	}
	second := g.Rows[1]
	if second.Cells[0].Verdict != "pass" || second.Cells[1].Verdict != "fail" || second.Cells[0].Lines != nil {
		t.Errorf("cells %+v", second.Cells)
	}
	a, b := second.Cells[0].Side, second.Cells[1].Side
	if a == nil || b == nil || *a.Turns[0].Answer != "Release notes: Grace" || *b.Turns[0].Answer != "Notes for Grace" {
		t.Fatalf("answers %+v %+v", a, b)
	}
	var lines []string
	for _, l := range second.Cells[1].Lines {
		lines = append(lines, l.Op+l.Text)
	}
	if strings.Join(lines, "|") != "-Release notes: Grace|+Notes for Grace" {
		t.Errorf("line diff %q", lines)
	}
	if _, after := e.counts(); after != sends {
		t.Errorf("reading the comparison back sent %d model requests", after-sends)
	}

	// Without a run, or on a run of no comparison: a refusal that says so.
	if err := c.call(lsp.MethodDiffRuns, lsp.DiffRunsParams{URI: uri, Comparison: true}, &d); err == nil || !strings.Contains(err.Error(), "comparison needs runId") {
		t.Errorf("no run: %v", err)
	}
	var run lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri, Model: "fake"}, &run)
	if err := c.call(lsp.MethodDiffRuns, lsp.DiffRunsParams{RunID: run.Report.RunID, Comparison: true}, &d); err == nil || !strings.Contains(err.Error(), "is not part of a comparison") {
		t.Errorf("a plain run: %v", err)
	}
}
