package runner

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

const trialsAgent = "---\nname: trials-agent\nmodel: " + compatAgentModel + "\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
	"- id: wobbly\n  input: wobbly question\n  assert:\n    - contains: yes\n" +
	"- id: steady\n  input: steady question\n  assert:\n    - contains: steady\n" +
	"```\n"

// TestTrialsExposeFlakyExamples: an endpoint that alternates its answer to
// one input makes that example flaky (2 of 4 trials pass, so it fails),
// while a steady example passes all 4; each trial is its own Session in the
// one journal, at concurrency 1 and on the pool.
func TestTrialsExposeFlakyExamples(t *testing.T) {
	for _, conc := range []int{1, 4} {
		var mu sync.Mutex
		seen := map[string]int{}
		srv := newChatServer(t, false, func(c chatCall) chatReply {
			mu.Lock()
			defer mu.Unlock()
			seen[c.User]++
			if c.User == "wobbly question" && seen[c.User]%2 == 0 {
				return chatReply{body: okBody(c.Model, "no")}
			}
			return chatReply{body: okBody(c.Model, "yes: "+c.User)}
		})
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
		} else if o.FromRun != "" && (r.Msg != TrialsWithRegrade || r.Next != TrialsWithRegradeNext) {
			t.Errorf("trials with a re-grade: %q; %q", r.Msg, r.Next)
		}
	}
	if _, err := Run(context.Background(), Options{Options: invocation.Options{StateDir: home}, Trials: 2}, req); err == nil {
		t.Error("Run with trials was not refused")
	}
}
