package lsp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// lensesOf returns a document's lenses as title → arguments.
func lensesOf(t *testing.T, c *client, uri string) map[string][]json.RawMessage {
	t.Helper()
	var lenses []struct {
		Command struct {
			Title     string            `json:"title"`
			Command   string            `json:"command"`
			Arguments []json.RawMessage `json:"arguments"`
		} `json:"command"`
	}
	c.mustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]string{"uri": uri}}, &lenses)
	out := map[string][]json.RawMessage{}
	for _, l := range lenses {
		out[l.Command.Title+" → "+l.Command.Command] = l.Command.Arguments
	}
	return out
}

const regradeLens = "Re-grade last run → " + lsp.CommandRegradeLastRun

// TestRegradeLensAndCompareRuns: the "Re-grade last run" lens appears once
// a test of the file finished (a Run is not enough), names that run, and
// its command re-grades the buffer's current assertions against the
// journaled answers with zero agent model calls (the scripted editor
// counts kmx/languageModel/send); kmx/diffRuns then compares the re-grade
// with the run before it, offline.
func TestRegradeLensAndCompareRuns(t *testing.T) {
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}}
	c := startEditor(t, e)
	path := writeAgent(t, "notes.agent.md", editorAgent)
	uri := fileURI(path)
	c.open(uri, 1, editorAgent)
	if l := lensesOf(t, c, uri); l[regradeLens] != nil {
		t.Fatalf("a Re-grade lens before any run: %v", l)
	}
	var res lsp.ReportResult
	c.mustCall(lsp.MethodRun, lsp.ExampleParams{URI: uri, ExampleID: "first"}, &res)
	runID := res.Report.RunID
	if l := lensesOf(t, c, uri); l[regradeLens] != nil {
		t.Fatalf("a Re-grade lens after a Run (which records no verdicts): %v", l)
	}
	var tested lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri}, &tested)
	src := tested.Report
	if src == nil || src.Verdict != runner.VerdictPass {
		t.Fatalf("source test %+v", tested)
	}
	_, sendsBefore := e.counts()
	if sendsBefore != 3 {
		t.Fatalf("%d sends for a run and a test of two examples, want 3", sendsBefore)
	}

	// Only an assertion changes, in the buffer.
	edited := strings.Replace(editorAgent, "  input: Grace\n  assert:\n    - contains: \"Release notes:\"", "  input: Grace\n  assert:\n    - contains: Goodbye", 1)
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 2},
		"contentChanges": []any{map[string]any{"text": edited}}})
	args := lensesOf(t, c, uri)[regradeLens]
	if len(args) != 1 {
		t.Fatalf("Re-grade lens arguments %s", args)
	}
	var p lsp.TestParams
	if err := json.Unmarshal(args[0], &p); err != nil || p.URI != uri || p.FromRun != src.RunID {
		t.Fatalf("Re-grade lens argument %s, want {uri, fromRun: %s} (%v)", args[0], src.RunID, err)
	}
	var regraded lsp.ReportResult
	c.mustCall(lsp.MethodTest, p, &regraded)
	rg := regraded.Report
	if _, sends := e.counts(); sends != sendsBefore {
		t.Fatalf("the re-grade sent %d model requests", sends-sendsBefore)
	}
	if rg == nil || verdicts(rg) != "first=pass,second=fail" || rg.Regrade == nil || rg.Regrade.AgentCalls != 0 || rg.Regrade.Replayed != 2 || rg.Regrade.SourceRun != src.RunID || regraded.DocumentVersion != 2 {
		t.Fatalf("re-grade %s, document version %d, regrade %+v", verdicts(rg), regraded.DocumentVersion, rg.Regrade)
	}
	if !rg.Examples[1].Verified || !rg.Examples[1].Journaled {
		t.Errorf("a re-graded example is not journaled and verified: %+v", rg.Examples[1])
	}
	// The lens now names the re-grade, the newest finished test.
	if err := json.Unmarshal(lensesOf(t, c, uri)[regradeLens][0], &p); err != nil || p.FromRun != rg.RunID {
		t.Errorf("after the re-grade the lens names %q, want %q", p.FromRun, rg.RunID)
	}
	// Each feature has one way in, its custom method: the kmx.* command IDs
	// are the extension's, and workspace/executeCommand is not served.
	if err := c.call("workspace/executeCommand", map[string]any{"command": lsp.CommandRegradeLastRun, "arguments": []any{p}}, nil); rpcCode(err) != jsonrpc2.MethodNotFound {
		t.Errorf("workspace/executeCommand answered %v, want MethodNotFound", err)
	}

	// Compare: the file's two newest runs are the source test and its
	// re-grade; the second example's verdict changed, its answer did not.
	var d lsp.DiffRunsResult
	c.mustCall(lsp.MethodDiffRuns, lsp.DiffRunsParams{URI: uri}, &d)
	if d.Diff == nil || d.Diff.A.ID != src.RunID || d.Diff.B.ID != rg.RunID || d.Diff.B.SourceRun != src.RunID || d.Diff.LiveCalls != 0 {
		t.Fatalf("diff of the two newest runs: %+v", d.Diff)
	}
	if d.Diff.Summary != (readback.DiffSummary{Same: 1, Changed: 1}) || d.Diff.Examples[1].ID != "second" || d.Diff.Examples[1].Status != readback.DiffChanged || len(d.Diff.Examples[1].Lines) != 0 {
		t.Errorf("diff summary %+v examples %+v", d.Diff.Summary, d.Diff.Examples)
	}
	// From the replay panel: a run and the one before it, by command.
	d = lsp.DiffRunsResult{}
	c.mustCall(lsp.MethodDiffRuns, lsp.DiffRunsParams{RunID: src.RunID}, &d)
	if d.Diff == nil || d.Diff.A.ID != runID || d.Diff.B.ID != src.RunID || d.Diff.Summary.OnlyB != 1 {
		t.Errorf("compare the source with the run before it: %+v", d.Diff)
	}
	if _, sends := e.counts(); sends != sendsBefore {
		t.Errorf("comparing runs sent %d model requests", sends-sendsBefore)
	}
	for _, bad := range []struct {
		p    lsp.DiffRunsParams
		code jsonrpc2.Code
		want string
	}{
		{lsp.DiffRunsParams{RunID: runID}, lsp.CodeRequestFailed, "no earlier finished run"},
		{lsp.DiffRunsParams{RunID: "20200101T000000.000000000Z-00000000"}, lsp.CodeRequestFailed, "not retained"},
		{lsp.DiffRunsParams{RunID: "../x"}, jsonrpc2.InvalidParams, "not a run ID"},
		{lsp.DiffRunsParams{}, jsonrpc2.InvalidParams, "give uri"},
	} {
		if err := c.call(lsp.MethodDiffRuns, bad.p, nil); rpcCode(err) != bad.code || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("diffRuns %+v: %v, want code %d saying %q", bad.p, err, bad.code, bad.want)
		}
	}
}

// TestRunEndRefreshesCodeLenses: the Replay and Re-grade lenses name runs,
// which change when a run ends, not when the text does; a client that
// supports workspace/codeLens/refresh is asked to fetch lenses again after
// each run, and one that does not is never asked.
func TestRunEndRefreshesCodeLenses(t *testing.T) {
	for _, supports := range []bool{true, false} {
		c := startServer(t, lsp.Options{})
		c.mustCall("initialize", map[string]any{
			"processId": nil, "rootUri": nil,
			"capabilities": map[string]any{"workspace": map[string]any{"codeLens": map[string]any{"refreshSupport": supports}}},
		}, nil)
		c.notify("initialized", map[string]any{})
		path := writeAgent(t, "greeter.agent.md", greeter)
		uri := fileURI(path)
		c.open(uri, 1, greeter)
		from := c.count()
		var res lsp.ReportResult
		c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri}, &res)
		if supports {
			c.waitMessage(from, "workspace/codeLens/refresh", nil)
			continue
		}
		// The one request after the run: nothing was sent before it.
		c.mustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]string{"uri": uri}}, nil)
		if strings.Contains(c.methods(), "workspace/codeLens/refresh") {
			t.Errorf("a client without refreshSupport was sent workspace/codeLens/refresh: %s", c.methods())
		}
	}
}
