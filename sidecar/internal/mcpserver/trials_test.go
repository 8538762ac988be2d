package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// TestTestToolTrialsAndFromRun: the Test tool takes trials (per-example
// counts in the report) and fromRun (a re-grade with zero agent model
// calls, said in the text), and refuses trials out of range or with
// fromRun.
func TestTestToolTrialsAndFromRun(t *testing.T) {
	cs := connectFresh(t)
	file := fixture(t, "pass.agent.md")

	var rep runner.Report
	decode(t, call(t, cs, "Test", map[string]any{"file": file, "trials": 3}), &rep)
	if rep.Trials != 3 || rep.Verdict != "pass" || len(rep.Examples) == 0 {
		t.Fatalf("trials 3: %+v", rep)
	}
	for _, ex := range rep.Examples {
		if ex.Trials == nil || ex.Trials.N != 3 || ex.Trials.Pass != 3 || ex.Trials.Flaky {
			t.Errorf("example %s trials %+v", ex.ID, ex.Trials)
		}
	}

	res := call(t, cs, "Test", map[string]any{"file": file, "fromRun": rep.RunID})
	var g runner.Report
	decode(t, res, &g)
	if g.Regrade == nil || g.Regrade.SourceRun != rep.RunID || g.Regrade.AgentCalls != 0 || g.Verdict != "pass" {
		t.Errorf("fromRun: %+v %+v", g.Regrade, g)
	}
	if !strings.Contains(text(res), "re-grade of run "+rep.RunID+": 0 agent model calls") {
		t.Errorf("fromRun text: %s", text(res))
	}

	// Out of range, 0 included (it ran once: an omitted argument), and
	// with fromRun: refused naming the tool's arguments, never the CLI's
	// --trials (issue 31 item 15).
	for _, n := range []int{0, -1, 21} {
		bad := call(t, cs, "Test", map[string]any{"file": file, "trials": n})
		if !bad.IsError || !strings.Contains(text(bad), "the trials argument is") || !strings.Contains(text(bad), "from 1 to 20") || strings.Contains(text(bad), "--trials") {
			t.Errorf("trials %d: %v %s", n, bad.IsError, text(bad))
		}
	}
	both := call(t, cs, "Test", map[string]any{"file": file, "trials": 2, "fromRun": rep.RunID})
	if !both.IsError || !strings.Contains(text(both), "trials and fromRun cannot be combined") || !strings.Contains(text(both), "omit trials") || strings.Contains(text(both), "--") {
		t.Errorf("trials with fromRun: %v %s", both.IsError, text(both))
	}
}
