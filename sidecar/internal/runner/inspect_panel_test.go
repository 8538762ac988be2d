package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// The replay of a workspace run shows the turn's calls and a diff of each
// changed file, read from the journal alone: the fixture is removed before
// the inspection, and nothing is sent.
func TestInspectShowsTheWorkspaceDiffFromTheJournal(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := copyDemoWorkspace(t, nil)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, req)
	if err != nil || rep.Verdict != VerdictPass {
		t.Fatalf("test: %v %+v", err, rep)
	}
	if err := os.RemoveAll(filepath.Join(filepath.Dir(req.Path), "fixtures")); err != nil {
		t.Fatal(err)
	}
	in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if in.LiveCalls != 0 || len(in.Turns) != 1 {
		t.Fatalf("live %d, turns %+v", in.LiveCalls, in.Turns)
	}
	tr := in.Turns[0]
	if len(tr.ToolCalls) < 2 || tr.ToolCalls[0].Result == nil {
		t.Errorf("tool calls %+v", tr.ToolCalls)
	}
	w := tr.Workspace
	if w == nil || w.Fixture != "fixtures/calc" || w.Hash == "" || !w.Outcome || len(w.Changes) != 1 {
		t.Fatalf("workspace %+v", w)
	}
	c := w.Changes[0]
	if c.Path != "calc/add.go" || c.Kind != "modified" || c.HashOnly || c.Note != "" || c.Hash == "" || c.BeforeHash == "" {
		t.Errorf("change %+v", c)
	}
	if !strings.HasPrefix(c.Diff, "@@ -") || !strings.Contains(c.Diff, "\n-") || !strings.Contains(c.Diff, "\n+") || strings.Contains(c.Diff, "+++ ") {
		t.Errorf("diff %q: want hunks with a removed and an added line, no header", c.Diff)
	}
	if tr.Verdict != VerdictPass || len(in.Examples) != 1 || in.Examples[0].Verdict != VerdictPass || len(in.Examples[0].Turns) != 1 {
		t.Errorf("verdict %q, examples %+v", tr.Verdict, in.Examples)
	}
}

// The replay of a multi-turn run groups each example's turns in script
// order with the verdict the run recorded for each, names the turns never
// sent, and sums the usage the routes reported per turn, per example and
// per run.
func TestInspectGroupsMultiTurnExamplesWithUsage(t *testing.T) {
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Concurrency: 1}}, agentRequest(t, turnsAgent))
	if err != nil {
		t.Fatal(err)
	}
	in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Examples) != 2 {
		t.Fatalf("examples %+v", in.Examples)
	}
	stops, talks := in.Examples[0], in.Examples[1]
	if stops.ID != "stops" || !stops.MultiTurn || stops.Verdict != VerdictFail || len(stops.Turns) != 2 ||
		len(stops.NotRun) != 1 || stops.NotRun[0].Turn != 3 || stops.NotRun[0].Verdict != VerdictNotRun {
		t.Errorf("stops %+v", stops)
	}
	for k, want := range []string{VerdictPass, VerdictFail} {
		tr := in.Turns[stops.Turns[k]]
		if tr.ExampleID != "stops" || tr.ScriptTurn != k+1 || tr.Verdict != want {
			t.Errorf("stops turn %d: %s #%d %s, want %s", k+1, tr.ExampleID, tr.ScriptTurn, tr.Verdict, want)
		}
	}
	if talks.ID != "talks" || talks.Verdict != VerdictPass || len(talks.Turns) != 3 || talks.Usage == nil || talks.JudgeUsage != nil {
		t.Fatalf("talks %+v", talks)
	}
	sum := 0
	for k, i := range talks.Turns {
		tr := in.Turns[i]
		if tr.ScriptTurn != k+1 || tr.Input != []string{"x", "y", "z"}[k] || tr.Usage == nil || tr.Usage.TotalTokens == 0 ||
			tr.Usage.TotalTokens != tr.Usage.PromptTokens+tr.Usage.CompletionTokens || tr.DurationMs == nil {
			t.Errorf("talks turn %d %+v", k+1, tr)
			continue
		}
		sum += tr.Usage.TotalTokens
		if rt := rep.Examples[1].Turns[k]; rt.Usage == nil || rt.Usage.TotalTokens != tr.Usage.TotalTokens {
			t.Errorf("turn %d usage %+v, the report's %+v", k+1, tr.Usage, rt.Usage)
		}
	}
	if talks.Usage.TotalTokens != sum || talks.Usage.Unreported != 0 {
		t.Errorf("talks usage %+v, want total %d", talks.Usage, sum)
	}
	if in.Usage == nil || in.Usage.Agent == nil || in.Usage.Agent.TotalTokens != rep.Usage.Agent.TotalTokens || in.Usage.Judge != nil {
		t.Errorf("run usage %+v, the report's %+v", in.Usage, rep.Usage)
	}
}

// A route that reports no usage leaves the turn's usage absent (never 0)
// and the example's sum "not reported".
func TestInspectUsageAbsentWhenNotReported(t *testing.T) {
	const agent = "---\nmodel: " + compatAgentModel + "\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
		"- id: plain\n  input: first\n  assert: [contains: first]\n```\n"
	srv := newChatServer(t, false, func(c chatCall) chatReply { return chatReply{body: okBody(c.Model, "answer: "+c.User)} })
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Endpoint: srv.base()}}, agentRequest(t, agent))
	if err != nil || rep.Verdict != VerdictPass {
		t.Fatalf("test: %v %+v", err, rep)
	}
	in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Turns) != 1 || in.Turns[0].State != readback.TurnVerified || in.Turns[0].Usage != nil {
		t.Fatalf("turn %+v, want verified without usage", in.Turns)
	}
	if u := in.Examples[0].Usage; u == nil || *u != (readback.TokenUsage{Unreported: 1}) {
		t.Errorf("example usage %+v, want one unreported turn", u)
	}
}
