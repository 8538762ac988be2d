package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/journal/journaltest"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// countingEndpoint answers agent requests with an echo and judge requests
// with a fixed score, counting each kind.
type countingEndpoint struct {
	*chatServer
	mu           sync.Mutex
	agent, judge int
}

func newCountingEndpoint(t *testing.T, score string) *countingEndpoint {
	e := &countingEndpoint{}
	e.chatServer = newChatServer(t, false, func(c chatCall) chatReply {
		e.mu.Lock()
		defer e.mu.Unlock()
		if c.System == judge.Instructions {
			e.judge++
			return chatReply{body: okBody(c.Model, `{"score": `+score+`, "reasoning": "ok"}`)}
		}
		e.agent++
		return echo(c)
	})
	return e
}

func (e *countingEndpoint) counts() (int, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.agent, e.judge
}

const regradeAgent = "---\nname: regrade-agent\nmodel: " + compatAgentModel + "\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
	"- id: alpha\n  input: first question\n  assert:\n    - contains: first\n    - llmJudge:\n        rubric: Mentions the question.\n        threshold: 70\n" +
	"- id: beta\n  input: second question\n  assert:\n    - contains: second\n" +
	"```\n"

func journalCount(t *testing.T, home string) int {
	t.Helper()
	n := 0
	ents, err := os.ReadDir(journal.Dir(home))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".db") {
			n++
		}
	}
	return n
}

// TestRegradeFromJournal: changing only an assertion re-grades with zero
// model calls (the endpoint counts them); a changed threshold sends fresh
// judge samples, said so; a one-byte change of the instructions refuses
// every example; a tampered source refuses the re-grade before anything is
// created, so nothing passes.
func TestRegradeFromJournal(t *testing.T) {
	ep := newCountingEndpoint(t, "90")
	home := testutil.PrivateDir(t)
	opts := Options{Options: invocation.Options{StateDir: home, Endpoint: ep.base()}}
	req := agentRequest(t, regradeAgent)
	src, err := Test(context.Background(), opts, req)
	if err != nil || src.Verdict != VerdictPass {
		t.Fatalf("source Test: %v %+v", err, src)
	}
	if a, j := ep.counts(); a != 2 || j != 2 {
		t.Fatalf("source run sent %d agent and %d judge requests, want 2 and 2", a, j)
	}

	regrade := func(body string) (*Report, error) {
		t.Helper()
		o := opts
		o.FromRun = src.RunID
		r := req
		r.Source = []byte(body)
		return Test(context.Background(), o, r)
	}

	// Only an assertion changed: new verdicts, nothing sent.
	changed := strings.Replace(regradeAgent, "- contains: second", "- contains: nowhere", 1)
	rep, err := regrade(changed)
	if err != nil {
		t.Fatal(err)
	}
	if a, j := ep.counts(); a != 2 || j != 2 {
		t.Fatalf("the re-grade sent requests: now %d agent, %d judge", a, j)
	}
	if rep.Examples[0].Verdict != VerdictPass || rep.Examples[1].Verdict != VerdictFail || !rep.Examples[0].Verified || !rep.Examples[0].Journaled {
		t.Errorf("re-grade verdicts %+v", rep.Examples)
	}
	if g := rep.Regrade; g == nil || g.SourceRun != src.RunID || g.AgentCalls != 0 || g.JudgeCalls != 0 || g.ReusedJudgeSamples != 2 || g.Replayed != 2 || g.NotRegraded != 0 {
		t.Errorf("regrade report %+v", rep.Regrade)
	}
	// The re-grade is a run of its own, replayable with zero calls, that
	// records its source.
	in, res, err := readback.InspectWithResult(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil || in.LiveCalls != 0 || in.Summary.Verified != 2 || in.Summary.JudgeSamples != 2 {
		t.Fatalf("inspect the re-grade: %v %+v", err, in)
	}
	if res == nil || res.SourceRun != src.RunID || res.AgentCalls != 0 || res.Verdict != VerdictFail {
		t.Errorf("re-grade result record %+v", res)
	}

	// A changed threshold: the journaled samples are not reused; fresh
	// ones are sent and counted.
	rep, err = regrade(strings.Replace(regradeAgent, "threshold: 70", "threshold: 95", 1))
	if err != nil {
		t.Fatal(err)
	}
	if a, j := ep.counts(); a != 2 || j != 4 {
		t.Errorf("after a threshold change: %d agent, %d judge requests; want 2 and 4", a, j)
	}
	if g := rep.Regrade; g.AgentCalls != 0 || g.JudgeCalls != 2 || g.ReusedJudgeSamples != 0 {
		t.Errorf("regrade report after a threshold change %+v", g)
	}
	if rep.Examples[0].Verdict != VerdictFail {
		t.Errorf("alpha at threshold 95 with scores 90: %s", rep.Examples[0].Verdict)
	}

	// The same without an endpoint: a fresh sample cannot be sent, so the
	// assertion is unknown, and the report counts no sample as sent.
	offline := opts
	offline.Endpoint, offline.FromRun = "", src.RunID
	r := req
	r.Source = []byte(strings.Replace(regradeAgent, "threshold: 70", "threshold: 95", 1))
	rep, err = Test(context.Background(), offline, r)
	if err != nil {
		t.Fatal(err)
	}
	if a, j := ep.counts(); a != 2 || j != 4 {
		t.Errorf("an offline re-grade sent requests: now %d agent, %d judge", a, j)
	}
	if g := rep.Regrade; g.AgentCalls != 0 || g.JudgeCalls != 0 || rep.Examples[0].Verdict != VerdictUnknown ||
		len(rep.Examples[0].Assertions) != 2 || !strings.Contains(rep.Examples[0].Assertions[1].Message, "has no endpoint in this re-grade") {
		t.Errorf("offline re-grade after a threshold change: %+v %s %+v", g, rep.Examples[0].Verdict, rep.Examples[0].Assertions)
	}

	// One byte of the instructions: refused per example, naming kmx test.
	rep, err = regrade(strings.Replace(regradeAgent, "You answer briefly.", "You answer briefly!", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range rep.Examples {
		if ex.Verdict != VerdictRefused || !strings.Contains(ex.Message, "instructions changed") || !strings.Contains(ex.Message, "kmx test") {
			t.Errorf("example %s after an instructions change: %s %q", ex.ID, ex.Verdict, ex.Message)
		}
	}
	if rep.Verdict == VerdictPass || rep.Regrade.NotRegraded != 2 {
		t.Errorf("file verdict %s, regrade %+v", rep.Verdict, rep.Regrade)
	}
	if a, j := ep.counts(); a != 2 || j != 4 {
		t.Errorf("a refused re-grade sent requests: %d agent, %d judge", a, j)
	}

	// A tampered source: refused before anything is created or sent.
	journaltest.UpdatePayload(t, src.JournalPath, 3, []byte(`{"x":1}`))
	before := journalCount(t, home)
	rep, err = regrade(changed)
	if _, ok := invocation.AsRefusal(err); !ok || !strings.Contains(err.Error(), "altered") {
		t.Fatalf("re-grade of a tampered run: %v", err)
	}
	if rep.Verdict != VerdictRefused || rep.Summary.Pass != 0 || journalCount(t, home) != before {
		t.Errorf("tampered source: verdict %s, %d pass, journals %d -> %d", rep.Verdict, rep.Summary.Pass, before, journalCount(t, home))
	}
}

// TestRegradeToolTurnsFromTheirTrace: a tool turn is re-graded from its
// journaled, replay-verified trace with zero model calls, so a changed
// trajectory assertion is judged against the calls the source made; when
// the tools offered today differ from the source's (kmx.yaml flipped a
// state), the example is refused, naming the tool, and nothing is copied.
func TestRegradeToolTurnsFromTheirTrace(t *testing.T) {
	home := testutil.PrivateDir(t)
	body := "---\nname: regrade-tools\nmodel: fake\ntools: [github_list_merged_prs]\n---\nCall the tool `github_list_merged_prs`\n\n## Examples\n\n```yaml\n" +
		"- id: weekly\n  input: What was merged this week?\n  tools:\n    github_list_merged_prs:\n      recorded:\n        calls:\n          - arguments: {}\n            result: {\"pullRequests\": [{\"number\": 12}]}\n" +
		"  assert:\n    - toolCalled: github_list_merged_prs\n```\n"
	req := toolAgent(t, body, "tools:\n  github_list_merged_prs: Enabled\n")
	src, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, req)
	if err != nil || src.Verdict != VerdictPass {
		t.Fatalf("source Test: %v %+v", err, src)
	}
	regrade := func(t *testing.T, req invocation.Request) *Report {
		t.Helper()
		rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}, FromRun: src.RunID}, req)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Regrade == nil || rep.Regrade.AgentCalls != 0 || rep.Regrade.JudgeCalls != 0 {
			t.Fatalf("a re-grade sent model calls: %+v", rep.Regrade)
		}
		return rep
	}

	t.Run("same tools: graded from the trace", func(t *testing.T) {
		rep := regrade(t, req)
		ex := rep.Examples[0]
		if rep.Verdict != VerdictPass || ex.Verdict != VerdictPass || !ex.Verified || rep.Regrade.Replayed != 1 || ex.ToolCalls != 1 || len(ex.ToolSources) != 1 || ex.ToolSources[0].Name != "github_list_merged_prs" {
			t.Errorf("re-grade of a tool example: %s %q verified %v tool calls %d %+v regrade %+v", ex.Verdict, ex.Message, ex.Verified, ex.ToolCalls, ex.ToolSources, rep.Regrade)
		}
		// A trajectory assertion the source never had fails against the
		// journaled calls: the re-grade judges the trace, not a guess.
		changed := req
		changed.Source = []byte(strings.Replace(string(req.Source), "    - toolCalled: github_list_merged_prs\n", "    - toolCalled: github_list_merged_prs\n    - toolCalls: {max: 0}\n", 1))
		if err := os.WriteFile(changed.Path, changed.Source, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(req.Path, req.Source, 0o600)
		rep = regrade(t, changed)
		if ex := rep.Examples[0]; ex.Verdict != VerdictFail || rep.Regrade.Replayed != 1 {
			t.Errorf("toolCalls max 0 on a re-graded trace with one call: %s %q", ex.Verdict, ex.Message)
		}
	})

	t.Run("tools changed: refused, nothing copied", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(filepath.Dir(req.Path), "kmx.yaml"), []byte("tools:\n  github_list_merged_prs: Disabled\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		rep := regrade(t, req)
		ex := rep.Examples[0]
		if ex.Verdict != VerdictRefused || ex.Verified || !strings.Contains(ex.Message, "the tool github_list_merged_prs changed since run "+src.RunID) ||
			!strings.Contains(ex.Message, "kmx.yaml state Enabled, now Disabled") || !strings.Contains(ex.Message, "run kmx test") {
			t.Errorf("re-grade after kmx.yaml disabled the tool: %s %q verified %v", ex.Verdict, ex.Message, ex.Verified)
		}
		if rep.Verdict == VerdictPass || rep.Regrade.NotRegraded != 1 || rep.Regrade.Replayed != 0 {
			t.Errorf("re-grade with changed tools: verdict %s regrade %+v", rep.Verdict, rep.Regrade)
		}
		if n := len(readJournal(t, home, rep.RunID)); n != 0 {
			t.Errorf("the re-grade journaled %d sessions for a refused tool example", n)
		}
	})
}
