package runner

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

const trialsAgent = "---\nname: trials-agent\nmodel: " + compatAgentModel + "\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
	"- id: wobbly\n  input: wobbly question\n  assert:\n    - contains: yes\n" +
	"- id: steady\n  input: steady question\n  assert:\n    - contains: steady\n" +
	"```\n"

// wobblyServer answers "yes: INPUT", except every second "wobbly
// question", which it answers "no".
func wobblyServer(t *testing.T) *chatServer {
	var mu sync.Mutex
	seen := map[string]int{}
	return newChatServer(t, false, func(c chatCall) chatReply {
		mu.Lock()
		defer mu.Unlock()
		seen[c.User]++
		if c.User == "wobbly question" && seen[c.User]%2 == 0 {
			return chatReply{body: okBody(c.Model, "no")}
		}
		return chatReply{body: okBody(c.Model, "yes: "+c.User)}
	})
}

// TestTrialsExposeFlakyExamples: an endpoint that alternates its answer to
// one input makes that example flaky (2 of 4 trials pass, so it fails),
// while a steady example passes all 4; each trial is its own Session in the
// one journal, at concurrency 1 and on the pool.
func TestTrialsExposeFlakyExamples(t *testing.T) {
	for _, conc := range []int{1, 4} {
		srv := wobblyServer(t)
		home := testutil.PrivateDir(t)
		opts := Options{Options: invocation.Options{StateDir: home, Endpoint: srv.base(), Concurrency: conc}, Trials: 4}
		rep, err := Test(context.Background(), opts, agentRequest(t, trialsAgent))
		if err != nil {
			t.Fatal(err)
		}
		w, s := rep.Examples[0], rep.Examples[1]
		if w.Trials == nil || *w.Trials != (TrialCounts{N: 4, Pass: 2, Fail: 2, Flaky: true}) || w.Verdict != VerdictFail || !strings.HasPrefix(w.Message, "flaky 2/4") {
			t.Errorf("concurrency %d: wobbly %s %+v %q", conc, w.Verdict, w.Trials, w.Message)
		}
		if s.Trials == nil || *s.Trials != (TrialCounts{N: 4, Pass: 4}) || s.Verdict != VerdictPass || len(s.TrialResults) != 4 {
			t.Errorf("concurrency %d: steady %s %+v", conc, s.Verdict, s.Trials)
		}
		if rep.Trials != 4 || rep.Verdict != VerdictFail || rep.Summary.Fail != 1 || rep.Summary.Pass != 1 {
			t.Errorf("concurrency %d: report trials %d verdict %s summary %+v", conc, rep.Trials, rep.Verdict, rep.Summary)
		}
		if n := len(srv.received()); n != 8 {
			t.Errorf("concurrency %d: %d requests, want 8 (4 trials of 2 examples)", conc, n)
		}
		if n := len(readJournal(t, home, rep.RunID)); n != 8 {
			t.Errorf("concurrency %d: %d sessions in the journal, want 8", conc, n)
		}
	}
}

// TestTrialsCountJudgeSplits: a judge whose two samples disagree on every
// trial makes each trial unknown and is counted in judgeSplits.
func TestTrialsCountJudgeSplits(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := newChatServer(t, false, func(c chatCall) chatReply {
		if strings.Contains(c.System, "grader") {
			mu.Lock()
			defer mu.Unlock()
			n++
			if n%2 == 0 {
				return chatReply{body: okBody(c.Model, `{"score": 10, "reasoning": "no"}`)}
			}
			return chatReply{body: okBody(c.Model, `{"score": 90, "reasoning": "yes"}`)}
		}
		return echo(c)
	})
	src := "---\nname: split\nmodel: " + compatAgentModel + "\n---\nYou answer.\n\n## Examples\n\n```yaml\n" +
		"- id: judged\n  input: hi\n  assert:\n    - llmJudge:\n        rubric: Says hi.\n" + "```\n"
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Endpoint: srv.base(), Concurrency: 1}, Trials: 3}, agentRequest(t, src))
	if err != nil {
		t.Fatal(err)
	}
	ex := rep.Examples[0]
	if ex.Trials == nil || *ex.Trials != (TrialCounts{N: 3, Unknown: 3, JudgeSplits: 3}) || ex.Verdict != VerdictUnknown {
		t.Errorf("split judge over trials: %s %+v %q", ex.Verdict, ex.Trials, ex.Message)
	}
}

// TestTrialsRefusals: out of range, on Run, and with a re-grade.
func TestTrialsRefusals(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := demo(t, "release-notes.agent.md")
	for _, o := range []Options{{Trials: 21}, {Trials: -1}, {Trials: 2, FromRun: "20261130T162341.123456789Z-0a1b2c3d"}} {
		o.StateDir = home
		if _, err := Test(context.Background(), o, req); err == nil {
			t.Errorf("options %+v were not refused", o)
		} else if r, ok := invocation.AsRefusal(err); !ok {
			t.Errorf("options %+v: %v is not a refusal", o, err)
		} else if o.FromRun != "" && (r.Msg != TrialsWithRegrade(problem.Flags) || r.Next != TrialsWithRegradeNext(problem.Flags)) {
			t.Errorf("trials with a re-grade: %q; %q", r.Msg, r.Next)
		}
	}
	if _, err := Run(context.Background(), Options{Options: invocation.Options{StateDir: home}, Trials: 2}, req); err == nil {
		t.Error("Run with trials was not refused")
	}
}

// TestTrialsJudgeUsagePerTrial: over trials each trial's judge samples
// (and their usage) are that trial's, in the report's trialResults and in
// the read-back of its journal: the samples of trial k sit on trial k's
// answer, not all on the first trial's. At concurrency 1 the trials run in
// turn, so a trial's samples are placed after its agent session and before
// the next trial's.
func TestTrialsJudgeUsagePerTrial(t *testing.T) {
	home := testutil.PrivateDir(t)
	body := "---\nmodel: fake\n---\nReply with the turn number\n\n## Examples\n\n```yaml\n" +
		"- id: one\n  input: hi\n  assert:\n    - llmJudge: {rubric: 'says `Turn 1: hi`'}\n" +
		"- id: two\n  turns:\n" +
		"    - input: a\n      assert: [contains: 'Turn 1: a']\n" +
		"    - input: b\n      assert:\n        - llmJudge: {rubric: 'says `Turn 2: b`'}\n" +
		"```\n"
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Concurrency: 1}, Trials: 3}, agentRequest(t, body))
	if err != nil || rep.Verdict != VerdictPass {
		t.Fatalf("test: %v %+v", err, rep)
	}
	for _, ex := range rep.Examples {
		if len(ex.TrialResults) != 3 {
			t.Fatalf("%s: %d trials", ex.ID, len(ex.TrialResults))
		}
		for k, tr := range ex.TrialResults {
			if tr.JudgeUsage == nil || tr.JudgeUsage.TotalTokens == 0 || tr.Usage == nil || tr.Usage.TotalTokens == 0 {
				t.Errorf("%s trial %d: usage %+v, judge usage %+v", ex.ID, k+1, tr.Usage, tr.JudgeUsage)
			}
		}
	}
	in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Examples) != 6 {
		t.Fatalf("%d inspected examples, want 3 trials of 2", len(in.Examples))
	}
	for _, ex := range in.Examples {
		if ex.JudgeUsage == nil || ex.JudgeUsage.TotalTokens == 0 || ex.Usage == nil {
			t.Errorf("%s trial %d: usage %+v, judge usage %+v", ex.ID, ex.Trial, ex.Usage, ex.JudgeUsage)
		}
	}
	for i, tr := range in.Turns {
		judged := tr.Example == "one" || tr.Example == "two/turn:2"
		if n := len(tr.JudgeSamples); judged && n != 2 || !judged && n != 0 {
			t.Errorf("turn %d (%s): %d judge samples", i+1, tr.Example, n)
			continue
		}
		for _, s := range tr.JudgeSamples {
			if s.SessionID < tr.SessionID || i+1 < len(in.Turns) && s.SessionID > in.Turns[i+1].SessionID {
				t.Errorf("turn %d (%s, %s) shows judge sample %s, placed outside its trial", i+1, tr.Example, tr.SessionID, s.SessionID)
			}
		}
	}
}

// TestTrialsFoldEachTurn: over trials a multi-turn example's turns are
// each folded over the trials as the example is: a turn that passed in
// every trial passes, one that failed in some is flaky and fails (its
// assertions its failing trial's), and one that some trials never sent is
// not a pass; each turn's message says what happened in every trial.
func TestTrialsFoldEachTurn(t *testing.T) {
	srv := wobblyServer(t)
	body := "---\nname: trials-agent\nmodel: " + compatAgentModel + "\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
		"- id: script\n  turns:\n" +
		"    - input: start\n      assert: [contains: yes]\n" +
		"    - input: wobbly question\n      assert: [contains: yes]\n" +
		"    - input: end\n      assert: [contains: yes]\n" +
		"```\n"
	opts := Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Endpoint: srv.base(), Concurrency: 1}, Trials: 4}
	rep, err := Test(context.Background(), opts, agentRequest(t, body))
	if err != nil {
		t.Fatal(err)
	}
	ex := rep.Examples[0]
	if ex.Verdict != VerdictFail || len(ex.Turns) != 3 || len(ex.TrialResults) != 4 {
		t.Fatalf("script %s %q, %d turns, %d trials", ex.Verdict, ex.Message, len(ex.Turns), len(ex.TrialResults))
	}
	want := []struct {
		verdict string
		counts  TrialCounts
		says    []string
	}{
		{VerdictPass, TrialCounts{N: 4, Pass: 4}, []string{"all 4 trials passed"}},
		{VerdictFail, TrialCounts{N: 4, Pass: 2, Fail: 2, Flaky: true}, []string{"flaky 2/4 passed", "trial 1: pass", "trial 2: fail: ", "trial 4: fail: "}},
		{VerdictUnknown, TrialCounts{N: 4, Pass: 2, NotRun: 2}, []string{"2/4 trials passed", "trial 3: pass", "trial 2: not run: turn 2 did not pass"}},
	}
	for i, w := range want {
		tr := ex.Turns[i]
		if tr.Verdict != w.verdict || tr.Trials == nil || *tr.Trials != w.counts || tr.Range == nil || tr.Usage == nil {
			t.Errorf("turn %d: %s %+v range %v usage %+v, want %s %+v", i+1, tr.Verdict, tr.Trials, tr.Range, tr.Usage, w.verdict, w.counts)
		}
		for _, s := range w.says {
			if !strings.Contains(tr.Message, s) {
				t.Errorf("turn %d message %q does not say %q", i+1, tr.Message, s)
			}
		}
	}
	// The failing turn shows its failing trial's assertion, as the
	// example shows its deciding trial's.
	if d := ex.Turns[1].Deciding; d == nil || ex.Turns[1].Assertions[*d].Outcome != "fail" {
		t.Errorf("turn 2 deciding %v assertions %+v", d, ex.Turns[1].Assertions)
	}
	// Each trial keeps its own turns.
	for k, tr := range ex.TrialResults {
		if len(tr.Turns) != 3 || tr.Turns[0].Trials != nil {
			t.Errorf("trial %d turns %+v", k+1, tr.Turns)
		}
	}
}
