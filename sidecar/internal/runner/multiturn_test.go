package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// turnsAgent answers each turn with its number and input on the fake
// model: "Turn N: INPUT", N counting the user messages it received, so an
// answer shows the turn received the earlier turns.
const turnsAgent = "---\nmodel: fake\n---\nReply with the turn number\n\n## Examples\n\n```yaml\n" +
	"- id: stops\n  turns:\n" +
	"    - input: a\n      assert: [contains: 'Turn 1: a']\n" +
	"    - input: b\n      assert: [contains: 'Turn 9']\n" +
	"    - input: c\n      assert: [contains: 'Turn 3: c']\n" +
	"- id: talks\n  turns:\n" +
	"    - input: x\n      assert: [contains: 'Turn 1: x', maxTokens: 100000, maxLatencyMs: 60000]\n" +
	"    - input: y\n      assert: [contains: 'Turn 2: y']\n" +
	"    - input: z\n      assert: [regex: '^Turn 3: z$']\n" +
	"```\n"

// agentSessions is every agent session of a run, by its journaled name.
func agentSessions(t *testing.T, home, runID string) map[string][]journal.Record {
	t.Helper()
	out := map[string][]journal.Record{}
	for _, recs := range readJournal(t, home, runID) {
		var p journal.SessionPlaced
		if err := journal.Decode(recs[0].Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Purpose == invocation.PurposeAgent {
			out[p.ExampleID] = recs
		}
	}
	return out
}

// TestMultiTurnFailedTurnStopsTheLaterOnes: a 3-turn example whose second
// turn fails stops the third (not run, not sent, never a pass); a 3-turn
// example whose turns all pass shows each turn received the earlier ones;
// each turn is its own journaled Session, its history in its turn.started.
func TestMultiTurnFailedTurnStopsTheLaterOnes(t *testing.T) {
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Concurrency: 1}}, agentRequest(t, turnsAgent))
	if err != nil {
		t.Fatal(err)
	}
	stops, talks := rep.Examples[0], rep.Examples[1]
	if stops.Verdict != VerdictFail || len(stops.Turns) != 3 {
		t.Fatalf("stops = %s %q, %d turns", stops.Verdict, stops.Message, len(stops.Turns))
	}
	want := []string{VerdictPass, VerdictFail, VerdictNotRun}
	for i, tr := range stops.Turns {
		if tr.Verdict != want[i] || tr.Turn != i+1 || tr.Range == nil {
			t.Errorf("stops turn %d = %+v, want %s", i+1, tr, want[i])
		}
	}
	if !strings.HasPrefix(stops.Message, "turn 2 of 3:") || stops.Deciding == nil || stops.DecidingRange == nil || stops.Turns[2].Journaled {
		t.Errorf("stops message %q deciding %v", stops.Message, stops.Deciding)
	}
	if talks.Verdict != VerdictPass || len(talks.Turns) != 3 || talks.Message != "all 3 turns passed" {
		t.Fatalf("talks = %s %q %+v", talks.Verdict, talks.Message, talks.Turns)
	}
	for _, tr := range talks.Turns {
		if tr.Verdict != VerdictPass || !tr.Journaled || !tr.Verified || tr.DurationMs == nil || tr.Usage == nil {
			t.Errorf("talks turn %+v", tr)
		}
	}
	// The fake model counts: the usage is the turns' sum, and the run's
	// agent usage the examples'.
	if u := talks.Usage; u == nil || u.TotalTokens == 0 || u.Unreported != 0 ||
		u.TotalTokens != talks.Turns[0].Usage.TotalTokens+talks.Turns[1].Usage.TotalTokens+talks.Turns[2].Usage.TotalTokens {
		t.Errorf("talks usage %+v", talks.Usage)
	}
	if rep.Usage == nil || rep.Usage.Agent.TotalTokens != stops.Usage.TotalTokens+talks.Usage.TotalTokens {
		t.Errorf("run usage %+v", rep.Usage)
	}
	sessions := agentSessions(t, home, rep.RunID)
	if len(sessions) != 5 {
		t.Fatalf("%d agent sessions, want 5 (2 of stops, 3 of talks): %v", len(sessions), keys(sessions))
	}
	if _, sent := sessions["stops/turn:3"]; sent {
		t.Error("the turn after the failed one was sent")
	}
	var started journal.TurnStarted
	if err := journal.Decode(sessions["talks/turn:3"][1].Payload, &started); err != nil {
		t.Fatal(err)
	}
	h, _ := json.Marshal(started.History)
	if string(h) != `[{"role":"user","content":"x"},{"role":"assistant","content":"Turn 1: x"},{"role":"user","content":"y"},{"role":"assistant","content":"Turn 2: y"}]` {
		t.Errorf("turn 3 history %s", h)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestMultiTurnRegradeSendsNothing: re-grading a multi-turn run with a
// changed assertion grades the journaled turns again with zero agent model
// calls; a changed input of turn 2 refuses the example.
func TestMultiTurnRegradeSendsNothing(t *testing.T) {
	home := testutil.PrivateDir(t)
	opts := Options{Options: invocation.Options{StateDir: home, Concurrency: 1}}
	req := agentRequest(t, turnsAgent)
	src, err := Test(context.Background(), opts, req)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(turnsAgent, "assert: [contains: 'Turn 2: y']", "assert: [contains: 'Turn 2: nope']", 1)
	req.Source = []byte(edited)
	opts.FromRun = src.RunID
	rep, err := Test(context.Background(), opts, req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Regrade == nil || rep.Regrade.AgentCalls != 0 || rep.Regrade.JudgeCalls != 0 || rep.Regrade.Replayed != 4 { // turns 1 and 2 of each; turn 3 follows a failed turn
		t.Fatalf("regrade = %+v", rep.Regrade)
	}
	talks := rep.Examples[1]
	if talks.Verdict != VerdictFail || talks.Turns[0].Verdict != VerdictPass || talks.Turns[1].Verdict != VerdictFail || talks.Turns[2].Verdict != VerdictNotRun {
		t.Fatalf("re-graded talks = %s %+v", talks.Verdict, talks.Turns)
	}
	// stops never answered its turn 3: it is re-graded as far as the
	// source ran it, failing at turn 2 again, turn 3 not run.
	if stops := rep.Examples[0]; stops.Verdict != VerdictFail || !strings.HasPrefix(stops.Message, "turn 2 of 3:") ||
		stops.Turns[0].Verdict != VerdictPass || stops.Turns[1].Verdict != VerdictFail || stops.Turns[2].Verdict != VerdictNotRun {
		t.Errorf("stops (never answered its turn 3) = %s %q %+v", stops.Verdict, stops.Message, stops.Turns)
	}
	// With its turn 2 passing now, turn 3 has no answer to judge: unknown,
	// never sent.
	req.Source = []byte(strings.Replace(edited, "assert: [contains: 'Turn 9']", "assert: [contains: 'Turn 2: b']", 1))
	rep, err = Test(context.Background(), opts, req)
	if err != nil {
		t.Fatal(err)
	}
	if stops := rep.Examples[0]; stops.Verdict != VerdictUnknown || !strings.Contains(stops.Message, "turn 3 of 3: not re-graded: run "+src.RunID+" holds no answer for turn 3 (its script stopped before it)") ||
		stops.Turns[1].Verdict != VerdictPass || stops.Turns[2].Verdict != VerdictUnknown || rep.Regrade.AgentCalls != 0 {
		t.Errorf("stops passing turn 2 = %s %q %+v", stops.Verdict, stops.Message, stops.Turns)
	}
	req.Source = []byte(strings.Replace(turnsAgent, "- input: y", "- input: w", 1))
	rep, err = Test(context.Background(), opts, req)
	if err != nil {
		t.Fatal(err)
	}
	if talks := rep.Examples[1]; talks.Verdict != VerdictRefused || !strings.Contains(talks.Message, "input of turn 2 changed") || rep.Regrade.AgentCalls != 0 {
		t.Errorf("changed input = %s %q", talks.Verdict, talks.Message)
	}
}

// usageBody is okBody with the usage an endpoint reports.
func usageBody(model, text string, prompt, completion int) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text}}},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	})
	return string(b)
}

// TestTokenBudgetWithoutUsageIsUnknown: on an endpoint that reports no
// usage, maxTokens is unknown (never a pass) and so is its example; where
// it reports usage, the budget passes or fails on the reported total, per
// turn.
func TestTokenBudgetWithoutUsageIsUnknown(t *testing.T) {
	const agent = "---\nmodel: " + compatAgentModel + "\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
		"- id: budget\n  turns:\n" +
		"    - input: first\n      assert: [contains: first, maxTokens: 50]\n" +
		"    - input: second\n      assert: [maxTokens: 50]\n" +
		"```\n"
	for _, tt := range []struct {
		name    string
		body    func(chatCall) string
		verdict string
		turns   []string
	}{
		{"no usage reported", func(c chatCall) string { return okBody(c.Model, "answer: "+c.User) }, VerdictUnknown, []string{VerdictUnknown, VerdictNotRun}},
		{"within the budget", func(c chatCall) string { return usageBody(c.Model, "answer: "+c.User, 30, 20) }, VerdictPass, []string{VerdictPass, VerdictPass}},
		{"second turn over it", func(c chatCall) string {
			if c.User == "second" {
				return usageBody(c.Model, "answer: "+c.User, 40, 11)
			}
			return usageBody(c.Model, "answer: "+c.User, 10, 5)
		}, VerdictFail, []string{VerdictPass, VerdictFail}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newChatServer(t, false, func(c chatCall) chatReply { return chatReply{body: tt.body(c)} })
			home := testutil.PrivateDir(t)
			rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Endpoint: srv.base()}}, agentRequest(t, agent))
			if err != nil {
				t.Fatal(err)
			}
			ex := rep.Examples[0]
			if ex.Verdict != tt.verdict || len(ex.Turns) != 2 {
				t.Fatalf("verdict %s %q", ex.Verdict, ex.Message)
			}
			for i, v := range tt.turns {
				if ex.Turns[i].Verdict != v {
					t.Errorf("turn %d = %s %q, want %s", i+1, ex.Turns[i].Verdict, ex.Turns[i].Message, v)
				}
			}
			if tt.verdict == VerdictUnknown {
				a := ex.Turns[0].Assertions[1]
				if a.Outcome != "unknown" || !strings.Contains(a.Message, "reported no token usage") {
					t.Errorf("maxTokens = %+v", a)
				}
				if ex.Usage == nil || ex.Usage.Unreported != 1 || ex.Usage.TotalTokens != 0 {
					t.Errorf("usage %+v, want one unreported turn", ex.Usage)
				}
			}
		})
	}
}

// TestMultiTurnTurnCutMidRunLeavesNoPass: a run stopped while turn 2
// waits on the endpoint leaves turn 2 journaled without a completion
// (incomplete: not a pass, not verified), turn 3 not run, and the example
// unknown; nothing in the run passes.
func TestMultiTurnTurnCutMidRunLeavesNoPass(t *testing.T) {
	const agent = "---\nmodel: " + compatAgentModel + "\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
		"- id: cut\n  turns:\n" +
		"    - input: first\n      assert: [contains: first]\n" +
		"    - input: second\n      assert: [contains: second]\n" +
		"    - input: third\n      assert: [contains: third]\n" +
		"```\n"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	srv := newChatServer(t, false, func(c chatCall) chatReply {
		if c.User == "second" {
			cancel()
			<-release
		}
		return chatReply{body: okBody(c.Model, "answer: "+c.User)}
	})
	home := testutil.PrivateDir(t)
	rep, err := Test(ctx, Options{Options: invocation.Options{StateDir: home, Endpoint: srv.base()}}, agentRequest(t, agent))
	if err != nil {
		t.Fatal(err)
	}
	ex := rep.Examples[0]
	if ex.Verdict == VerdictPass || rep.Verdict == VerdictPass || ex.Turns[0].Verdict != VerdictPass ||
		ex.Turns[1].Verdict != VerdictUnknown || ex.Turns[1].Verified || ex.Turns[2].Verdict != VerdictNotRun {
		t.Fatalf("cut = %s %q %+v", ex.Verdict, ex.Message, ex.Turns)
	}
	if n := len(srv.received()); n != 2 {
		t.Errorf("%d requests, want 2 (turn 3 never sent)", n)
	}
	if rep.RunID == "" {
		t.Fatal("the cut run has no run ID to read back")
	}
	recs := agentSessions(t, home, rep.RunID)["cut/turn:2"]
	for _, r := range recs {
		if r.Kind == journal.KindModelCompletion {
			t.Fatalf("turn 2 has a completion: %s", r.Payload)
		}
	}
	if len(recs) == 0 || recs[len(recs)-1].Kind != journal.KindTurnTerminal {
		t.Fatalf("turn 2 records %v", recs)
	}
}

// TestMultiTurnToolTurnsRegradeFromTheirTrace: a multi-turn example with a
// recorded tool re-grades every turn from its journaled trace with zero
// model calls, and a trajectory assertion added afterwards is judged
// against the calls each turn made.
func TestMultiTurnToolTurnsRegradeFromTheirTrace(t *testing.T) {
	home := testutil.PrivateDir(t)
	opts := Options{Options: invocation.Options{StateDir: home, Concurrency: 1}}
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "valid", "conversation.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	req := agentRequest(t, string(src))
	req.Examples = []string{"follow-up"}
	first, err := Test(context.Background(), opts, req)
	if err != nil || first.Verdict != VerdictPass {
		t.Fatalf("source run: %v %+v", err, first)
	}
	opts.FromRun = first.RunID
	rep, err := Test(context.Background(), opts, req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictPass || rep.Regrade == nil || rep.Regrade.AgentCalls != 0 || rep.Regrade.Replayed != 2 {
		t.Fatalf("re-grade: %s %+v %+v", rep.Verdict, rep.Regrade, rep.Examples)
	}
	req.Source = []byte(strings.Replace(string(src), "        - maxTokens: 4000\n", "        - maxTokens: 4000\n        - toolCalls: {max: 0}\n", 1))
	rep, err = Test(context.Background(), opts, req)
	if err != nil {
		t.Fatal(err)
	}
	ex := rep.Examples[0]
	if ex.Verdict != VerdictFail || len(ex.Turns) != 2 || ex.Turns[0].Verdict != VerdictPass || ex.Turns[1].Verdict != VerdictFail || rep.Regrade.AgentCalls != 0 {
		t.Fatalf("toolCalls max 0 on turn 2's re-graded trace: %s %+v %+v", ex.Verdict, ex.Turns, rep.Regrade)
	}
}

// TestMultiTurnJudgedTurn: an llmJudge in a turn's assert list is judged
// on the fake judge like a one-turn example's (its route is resolved from
// the turns' assertions), and the run's result records the judge, so a
// re-grade can tell whether its samples may be reused.
func TestMultiTurnJudgedTurn(t *testing.T) {
	home := testutil.PrivateDir(t)
	body := "---\nmodel: fake\n---\nReply with the turn number\n\n## Examples\n\n```yaml\n" +
		"- id: judged\n  turns:\n" +
		"    - input: a\n      assert: [contains: 'Turn 1: a']\n" +
		"    - input: b\n      assert:\n        - llmJudge: {rubric: 'says `Turn 2: b`'}\n" +
		"```\n"
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Concurrency: 1}}, agentRequest(t, body))
	if err != nil {
		t.Fatal(err)
	}
	ex := rep.Examples[0]
	if ex.Verdict != VerdictPass || len(ex.Turns) != 2 || ex.Turns[1].Verdict != VerdictPass || ex.JudgeUsage == nil || ex.JudgeUsage.TotalTokens == 0 {
		t.Fatalf("judged = %s %q, turns %+v, judge usage %+v", ex.Verdict, ex.Message, ex.Turns, ex.JudgeUsage)
	}
	_, res, err := readback.InspectWithResult(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil || res == nil {
		t.Fatalf("inspect: %v (result %v)", err, res)
	}
	if len(res.Examples) != 1 || len(res.Examples[0].Judges) != 1 || res.Examples[0].Judges[0].Model.Route != "fake" {
		t.Errorf("result examples %+v", res.Examples)
	}
}
