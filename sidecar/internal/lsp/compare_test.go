package lsp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/compare"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// TestCompareModelsOnTheEditorRoute: kmx/compareModels tests the open
// buffer on two models VS Code offers and the fake one, each its own run
// and journal, and answers the sidecar's grid: a row per example, a column
// per model in the order asked, and the one example the models disagree on
// marked differs. Each editor model gets exactly its own two sends.
func TestCompareModelsOnTheEditorRoute(t *testing.T) {
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT, editorSonnet}}
	// Sonnet forgets the prefix for Grace: "second" is where they differ.
	e.reply = func(_ context.Context, _ int, p route.EditorSendParams) (any, error) {
		in := p.Messages[1].Content
		if p.Model.ID == editorSonnet.ID && in == "Grace" {
			return route.EditorSendResult{Model: p.Model, Text: "Notes for Grace"}, nil
		}
		return route.EditorSendResult{Model: p.Model, Text: "Release notes: " + in}, nil
	}
	c := startEditor(t, e)
	path := writeAgent(t, "notes.agent.md", "stale text on disk: the buffer is what runs")
	uri := fileURI(path)
	c.open(uri, 3, editorAgent)

	var res lsp.CompareModelsResult
	c.mustCall(lsp.MethodCompareModels, lsp.CompareModelsParams{URI: uri, Models: []string{"GPT-4.1", "Claude Sonnet 4.6 (copilot)"}}, &res)
	g := res.Comparison
	if res.Refusal != nil || g == nil {
		t.Fatalf("refused: %+v", res.Refusal)
	}
	if res.DocumentVersion != 3 || len(res.Reports) != 2 {
		t.Errorf("document version %d, %d reports", res.DocumentVersion, len(res.Reports))
	}
	if len(g.Columns) != 2 || g.Columns[0].Model != (compare.Model{Route: "editor", Model: "copilot/gpt-4.1"}) || g.Columns[1].Model.Model != "copilot/claude-sonnet-4.6" {
		t.Fatalf("columns %+v", g.Columns)
	}
	if g.Columns[0].RunID == "" || g.Columns[1].RunID == "" || g.Columns[0].RunID == g.Columns[1].RunID {
		t.Errorf("each column its own run: %q %q", g.Columns[0].RunID, g.Columns[1].RunID)
	}
	if len(g.Rows) != 2 || g.Rows[0].ID != "first" || g.Rows[1].ID != "second" {
		t.Fatalf("rows %+v", g.Rows)
	}
	if g.Rows[0].Differs || !g.Rows[1].Differs {
		t.Errorf("differs: first %v second %v, want false true", g.Rows[0].Differs, g.Rows[1].Differs)
	}
	if v := g.Rows[1].Cells[1].Verdict; v != compare.VerdictFail {
		t.Errorf("second on Sonnet: %s", v)
	}
	if g.Verdict != compare.VerdictFail || g.Summary.Pass != 3 || g.Summary.Fail != 1 {
		t.Errorf("verdict %s summary %+v", g.Verdict, g.Summary)
	}
	if _, sends := e.counts(); sends != 4 {
		t.Errorf("%d sends, want 2 per editor model", sends)
	}
	for _, rep := range res.Reports {
		if rep == nil || !rep.Journaled || rep.Verdict == runner.VerdictRefused {
			t.Errorf("column report %+v", rep)
		}
	}
}

// TestCompareModelsMarksTurns: a multi-turn example compared on two
// models answers each model's turn verdicts in its cells and each turn's
// worst model in the row's turns, which the Test Explorer marks the
// turns' children with: GPT passes both turns, Sonnet fails the first, so
// its second is not run there and the row's second turn is unknown.
func TestCompareModelsMarksTurns(t *testing.T) {
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT, editorSonnet}}
	e.reply = func(_ context.Context, _ int, p route.EditorSendParams) (any, error) {
		in := p.Messages[len(p.Messages)-1].Content
		if p.Model.ID == editorSonnet.ID {
			return route.EditorSendResult{Model: p.Model, Text: "Notes for " + in}, nil
		}
		return route.EditorSendResult{Model: p.Model, Text: "Release notes: " + in}, nil
	}
	c := startEditor(t, e)
	path := writeAgent(t, "notes.agent.md", "")
	uri := fileURI(path)
	c.open(uri, 1, "---\nname: notes\n---\nYou write release notes.\n\n## Examples\n\n```yaml\n"+
		"- id: script\n  turns:\n    - input: Ada\n      assert: [contains: 'Release notes: Ada']\n    - input: Grace\n      assert: [contains: 'Release notes: Grace']\n```\n")

	var res lsp.CompareModelsResult
	c.mustCall(lsp.MethodCompareModels, lsp.CompareModelsParams{URI: uri, Models: []string{"GPT-4.1", "Claude Sonnet 4.6 (copilot)"}}, &res)
	g := res.Comparison
	if res.Refusal != nil || g == nil || len(g.Rows) != 1 {
		t.Fatalf("refused: %+v (%+v)", res.Refusal, g)
	}
	row := g.Rows[0]
	verdicts := func(cells []compare.TurnCell) string {
		var out []string
		for _, c := range cells {
			out = append(out, c.Verdict)
		}
		return strings.Join(out, ",")
	}
	if got := verdicts(row.Cells[0].Turns); got != "pass,pass" {
		t.Errorf("GPT's turns %s", got)
	}
	if got := verdicts(row.Cells[1].Turns); got != "fail,not run" {
		t.Errorf("Sonnet's turns %s", got)
	}
	if len(row.Turns) != 2 || row.Turns[0] != (compare.TurnRow{Turn: 1, Verdict: compare.VerdictFail}) || row.Turns[1] != (compare.TurnRow{Turn: 2, Verdict: compare.VerdictUnknown}) {
		t.Errorf("row turns %+v", row.Turns)
	}
}

// TestCompareModelsRefusals: what cannot be a comparison is a result with
// a refusal that says what to change, and nothing is sent: one model
// without a baseline, a model named twice, a baseline of a file outside a
// git work tree.
func TestCompareModelsRefusals(t *testing.T) {
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}}
	c := startEditor(t, e)
	path := writeAgent(t, "notes.agent.md", editorAgent)
	uri := fileURI(path)
	c.open(uri, 1, editorAgent)
	for _, tc := range []struct {
		name string
		p    lsp.CompareModelsParams
		msg  string
		next string
	}{
		{"one model", lsp.CompareModelsParams{URI: uri, Models: []string{"GPT-4.1"}}, "two or more models", "pick at least two"},
		{"twice", lsp.CompareModelsParams{URI: uri, Models: []string{"fake", "fake"}}, "names the model fake twice", "name each model once"},
		{"no git", lsp.CompareModelsParams{URI: uri, Models: []string{"fake"}, Baseline: "HEAD"}, "not inside a git work tree", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res lsp.CompareModelsResult
			c.mustCall(lsp.MethodCompareModels, tc.p, &res)
			if res.Comparison != nil || res.Refusal == nil || !strings.Contains(res.Refusal.Message, tc.msg) || !strings.Contains(res.Refusal.Next, tc.next) || res.Refusal.Next == "" {
				t.Errorf("refusal %+v, want %q / %q", res.Refusal, tc.msg, tc.next)
			}
		})
	}
	if lists, sends := e.counts(); lists != 0 || sends != 0 {
		t.Errorf("%d model lists and %d sends for refused comparisons", lists, sends)
	}
}
