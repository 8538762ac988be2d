package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

func demo(t *testing.T, name string) invocation.Request {
	t.Helper()
	path := filepath.Join("..", "..", "..", "testdata", "demo", name)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return invocation.Request{Path: path, Source: src}
}

func agentRequest(t *testing.T, body string) invocation.Request {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.agent.md")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return invocation.Request{Path: path, Source: []byte(body)}
}

// readJournal opens a finished run and returns its records per session, in
// placement order, checking the hash chain on the way.
func readJournal(t *testing.T, home, runID string) [][]journal.Record {
	t.Helper()
	ctx := context.Background()
	j, err := journal.Open(ctx, journal.Dir(home), runID)
	if err != nil {
		t.Fatalf("open journal: %v", err)
	}
	defer j.Close()
	ids, err := j.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]journal.Record
	for _, id := range ids {
		recs, err := j.Records(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs)
	}
	return out
}

func TestTestDemoPassesWithJournaledVerifiedTurns(t *testing.T) {
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, demo(t, "release-notes.agent.md"))
	if err != nil {
		t.Fatalf("Test: %v", err)
	}
	if rep.Verdict != VerdictPass || rep.Summary.Pass != 2 || !rep.Journaled || rep.Label != Label {
		t.Fatalf("report = verdict %q summary %+v journaled %v label %q", rep.Verdict, rep.Summary, rep.Journaled, rep.Label)
	}
	for _, ex := range rep.Examples {
		if !ex.Verified || !ex.Journaled || ex.Answer != nil {
			t.Errorf("example %s: verified %v journaled %v answer shown %v", ex.ID, ex.Verified, ex.Journaled, ex.Answer != nil)
		}
	}
	if rep.Retention != nil {
		t.Errorf("a passing Test retained a failure record: %+v", rep.Retention)
	}
	sessions := readJournal(t, home, rep.RunID)
	// Two agent turns and two judge samples for the one llmJudge assertion.
	if len(sessions) != 4 {
		t.Fatalf("journal has %d sessions, want 4 (2 examples + 2 judge samples)", len(sessions))
	}
	purposes := map[string]int{}
	for _, recs := range sessions {
		if len(recs) != 5 {
			t.Fatalf("session has %d records, want 5", len(recs))
		}
		for i, k := range journal.TurnKinds {
			if recs[i].Kind != k || recs[i].Version != journal.SchemaVersion {
				t.Fatalf("record %d is %s v%d, want %s v%d", i, recs[i].Kind, recs[i].Version, k, journal.SchemaVersion)
			}
		}
		var placed journal.SessionPlaced
		if err := journal.Decode(recs[0].Payload, &placed); err != nil {
			t.Fatal(err)
		}
		purposes[placed.Purpose]++
	}
	if purposes[invocation.PurposeAgent] != 2 || purposes[invocation.PurposeJudge] != 2 {
		t.Errorf("purposes = %v, want 2 agent and 2 judge", purposes)
	}
}

func TestFailingExampleIsDecidedByItsAssertionAndRetained(t *testing.T) {
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, demo(t, "support-triage.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictFail || rep.Summary.Pass != 1 || rep.Summary.Fail != 1 {
		t.Fatalf("verdict %q summary %+v", rep.Verdict, rep.Summary)
	}
	ex := rep.Examples[1]
	if ex.ID != "billing-question" || ex.Verdict != VerdictFail || ex.Deciding == nil || *ex.Deciding != 0 || ex.DecidingRange == nil || ex.Range == nil {
		t.Fatalf("failing example = %+v", ex)
	}
	if ex.DecidingRange.Start.Line <= ex.Range.Start.Line {
		t.Errorf("deciding assertion line %d is not below the example line %d", ex.DecidingRange.Start.Line, ex.Range.Start.Line)
	}
	if rep.Retention == nil || rep.Retention.Status != "retained" {
		t.Errorf("retention = %+v, want retained", rep.Retention)
	}
}

func TestEditingInstructionsChangesTheFakeAnswer(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := demo(t, "support-triage.agent.md")
	req.Examples = []string{"billing-question"}
	req.Source = []byte(strings.Replace(string(req.Source), "Reply with exactly `bug`.", "Reply with exactly `billing`.", 1))
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictPass || rep.Selection != "subset" || len(rep.Examples) != 1 {
		t.Fatalf("after the edit: verdict %q selection %q examples %d", rep.Verdict, rep.Selection, len(rep.Examples))
	}
}

func TestRunShowsAnswersAndAdHocInput(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := demo(t, "release-notes.agent.md")
	input := "Draft notes for today"
	req.Input = &input
	rep, err := Run(context.Background(), Options{Options: invocation.Options{StateDir: home}}, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Examples) != 1 || !rep.Examples[0].AdHoc || rep.Examples[0].Answer == nil ||
		*rep.Examples[0].Answer != "Release notes: Draft notes for today" || rep.Verdict != VerdictAnswered {
		t.Fatalf("ad-hoc run = %+v verdict %q", rep.Examples, rep.Verdict)
	}
}

// TestExamplesAndInputShareOneInvocation: selected examples and an ad-hoc
// input run in one invocation and one journal, the input last.
func TestExamplesAndInputShareOneInvocation(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := demo(t, "release-notes.agent.md")
	input := "Draft notes for today"
	req.Input, req.Examples = &input, []string{"hotfix"}
	rep, err := Run(context.Background(), Options{Options: invocation.Options{StateDir: home}}, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Examples) != 2 || rep.Examples[0].ID != "hotfix" || rep.Examples[0].Verdict != VerdictPass ||
		!rep.Examples[1].AdHoc || rep.Examples[1].Verdict != VerdictAnswered || rep.Verdict != VerdictPass {
		t.Fatalf("examples %+v verdict %q", rep.Examples, rep.Verdict)
	}
	entries, err := os.ReadDir(filepath.Dir(rep.JournalPath))
	if err != nil {
		t.Fatal(err)
	}
	dbs := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".db") {
			dbs++
		}
	}
	if dbs != 1 {
		t.Fatalf("%d journals, want one for the whole invocation", dbs)
	}
}

// TestRunIDOnlyAfterFinalize: a journal that could not be finalized is not
// named in the report.
func TestRunIDOnlyAfterFinalize(t *testing.T) {
	ex := &scriptedExecutor{outcome: Outcome{Answer: "ok"}}
	opts := Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Model: "fake"}, NewExecutor: func(j *journal.Journal, _ *invocation.Plan) (Executor, func(), error) {
		return ex, func() { _ = j.Close() }, nil
	}}
	rep, err := Test(context.Background(), opts, agentRequest(t, threeExamples))
	if err == nil || !strings.Contains(err.Error(), "finish journal") {
		t.Fatalf("err = %v, want the finalize failure", err)
	}
	if rep == nil || rep.RunID != "" || rep.JournalPath != "" || rep.Verdict == VerdictPass {
		t.Fatalf("report names an unfinalized journal: %+v", rep)
	}
}

func TestJudgeWithoutQuotedPhraseIsUnknownNeverPass(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := agentRequest(t, "Reply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: vague\n  input: hi\n  assert:\n    - llmJudge:\n        rubric: The answer is good\n        judgeModel: fake\n```\n")
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Examples[0].Verdict != VerdictUnknown || rep.Verdict != VerdictUnknown {
		t.Fatalf("inconclusive judge gave %q / %q", rep.Examples[0].Verdict, rep.Verdict)
	}
}

// TestRefusalsCreateNothing: every refusal happens before a journal file is
// created or a request is sent (invariant 3).
func TestRefusalsCreateNothing(t *testing.T) {
	long := strings.Repeat("x", invocation.MaxAdHocInput+1)
	shaped := "token " + "gh" + "p_" + strings.Repeat("A1b2", 9)
	valid := "Reply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: one\n  input: hi\n  assert:\n    - contains: ok\n```\n"
	judged := "Reply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: one\n  input: hi\n  assert:\n    - llmJudge:\n        rubric: says `ok`\n        judgeModel: gpt-judge\n```\n"
	cases := []struct {
		name    string
		body    string
		opts    Options
		run     bool
		input   *string
		ids     []string
		wantMsg string
	}{
		{name: "non-fake model without endpoint", body: valid, opts: Options{Options: invocation.Options{Model: "llama3"}}, wantMsg: "needs an OpenAI-compatible endpoint"},
		{name: "no model and no endpoint", body: valid, wantMsg: "names no model, so kmx has none to send"},
		{name: "fake with endpoint", body: valid, opts: Options{Options: invocation.Options{Model: "fake", Endpoint: "http://127.0.0.1:11434/v1"}}, wantMsg: "cannot be combined with an endpoint"},
		{name: "unknown example", body: valid, opts: Options{Options: invocation.Options{Model: "fake"}}, ids: []string{"nope"}, wantMsg: `no example with id "nope"`},
		{name: "unfinished file", body: valid[:len(valid)-5], opts: Options{Options: invocation.Options{Model: "fake"}}, wantMsg: "still being written"},
		{name: "invalid file", body: strings.Replace(valid, "contains", "containz", 1), opts: Options{Options: invocation.Options{Model: "fake"}}, wantMsg: "error"},
		{name: "credential in file", body: strings.Replace(valid, "input: hi", "input: "+shaped, 1), opts: Options{Options: invocation.Options{Model: "fake"}}, wantMsg: "error"},
		{name: "judge endpoint without llmJudge", body: valid, opts: Options{Options: invocation.Options{Model: "fake", JudgeEndpoint: "http://127.0.0.1:1/v1"}}, wantMsg: "no selected example has an llmJudge"},
		{name: "llmJudge with no judge route", body: judged, opts: Options{Options: invocation.Options{Model: "fake"}}, wantMsg: "llmJudge needs a judge"},
		{name: "oversized ad-hoc input", body: valid, opts: Options{Options: invocation.Options{Model: "fake"}}, run: true, input: &long, wantMsg: "limit is 16384"},
		{name: "credential-shaped ad-hoc input", body: valid, opts: Options{Options: invocation.Options{Model: "fake"}}, run: true, input: &shaped, wantMsg: "credential-shaped"},
		{name: "credential-shaped input with an example", body: valid, opts: Options{Options: invocation.Options{Model: "fake"}}, run: true, input: &shaped, ids: []string{"one"}, wantMsg: "credential-shaped"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := testutil.PrivateDir(t)
			tc.opts.StateDir = home
			req := agentRequest(t, tc.body)
			req.Input, req.Examples = tc.input, tc.ids
			rep, r := mustRefuse(t, tc.run, tc.opts, req)
			if !strings.Contains(r.Msg, tc.wantMsg) || r.Next == "" {
				t.Errorf("refusal %q (next %q) does not say %q", r.Msg, r.Next, tc.wantMsg)
			}
			if strings.Contains(r.Msg, "p_A1b2") {
				t.Errorf("refusal echoes the credential-shaped value")
			}
			if rep == nil || rep.Verdict != VerdictRefused || rep.RunID != "" || rep.Refusal == nil {
				t.Errorf("report = %+v", rep)
			}
			entries, _ := os.ReadDir(home)
			if len(entries) != 0 {
				t.Errorf("a refusal created %d entries in the state folder", len(entries))
			}
		})
	}
}

// mustRefuse runs Run (run) or Test and requires a refusal.
func mustRefuse(t *testing.T, run bool, opts Options, req invocation.Request) (*Report, *invocation.Refusal) {
	t.Helper()
	var rep *Report
	var err error
	if run {
		rep, err = Run(context.Background(), opts, req)
	} else {
		rep, err = Test(context.Background(), opts, req)
	}
	r, ok := invocation.AsRefusal(err)
	if !ok {
		t.Fatalf("err = %v, want a refusal", err)
	}
	return rep, r
}

// scriptedExecutor answers every turn with a fixed outcome, or blocks until
// the turn's context ends.
type scriptedExecutor struct {
	mu      sync.Mutex
	calls   []Turn
	outcome Outcome
	block   bool
	started chan struct{}
}

func (s *scriptedExecutor) Execute(ctx context.Context, t Turn) (Outcome, error) {
	s.mu.Lock()
	s.calls = append(s.calls, t)
	s.mu.Unlock()
	if s.block {
		if s.started != nil {
			close(s.started)
			s.started = nil
		}
		<-ctx.Done()
		return Outcome{Journaled: true, Cancelled: true, Problem: "cancelled"}, nil
	}
	return s.outcome, nil
}

func withExecutor(e Executor) func(*journal.Journal, *invocation.Plan) (Executor, func(), error) {
	return func(*journal.Journal, *invocation.Plan) (Executor, func(), error) { return e, func() {}, nil }
}

const threeExamples = "Reply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - contains: ok\n- id: b\n  input: hi\n  assert:\n    - contains: ok\n- id: c\n  input: hi\n  assert:\n    - contains: ok\n```\n"

// TestOnlyVerifiedJournaledTurnsPass is invariant 1 at the runner: an answer
// that would satisfy every assertion is still not a pass unless its turn is
// complete, journaled and replay-verified.
func TestOnlyVerifiedJournaledTurnsPass(t *testing.T) {
	cases := []struct {
		name string
		out  Outcome
		want string
	}{
		{"verified and journaled", Outcome{Answer: "ok", Completed: true, Verified: true, Journaled: true}, VerdictPass},
		{"not verified", Outcome{Answer: "ok", Completed: true, Journaled: true, Problem: "not replay-verified: replay answer differs"}, VerdictUnknown},
		{"verified but not journaled", Outcome{Answer: "ok", Completed: true, Verified: true}, VerdictUnknown},
		{"not completed", Outcome{Answer: "ok", Journaled: true, Problem: "model refused"}, VerdictUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := &scriptedExecutor{outcome: tc.out}
			rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Model: "fake"}, NewExecutor: withExecutor(ex)}, agentRequest(t, threeExamples))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Examples[0].Verdict != tc.want {
				t.Fatalf("verdict %q, want %q (%s)", rep.Examples[0].Verdict, tc.want, rep.Examples[0].Message)
			}
			if tc.want != VerdictPass && rep.Verdict == VerdictPass {
				t.Fatalf("file verdict pass with a non-pass example")
			}
		})
	}
}

func TestCancellationStopsInFlightAndLaterSends(t *testing.T) {
	ex := &scriptedExecutor{block: true, started: make(chan struct{})}
	started := ex.started
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	rep, err := Test(ctx, Options{Options: invocation.Options{Concurrency: 1, StateDir: testutil.PrivateDir(t), Model: "fake"}, NewExecutor: withExecutor(ex)}, agentRequest(t, threeExamples))
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.calls) != 1 {
		t.Fatalf("executor called %d times after cancellation, want 1", len(ex.calls))
	}
	for i, r := range rep.Examples {
		if r.Verdict != VerdictUnknown {
			t.Errorf("example %d verdict %q, want unknown", i, r.Verdict)
		}
	}
	if !strings.Contains(rep.Examples[2].Message, "not sent") || rep.Retention != nil {
		t.Errorf("later example message %q, retention %+v", rep.Examples[2].Message, rep.Retention)
	}
}

func TestExampleDeadlineAbortsLaterSends(t *testing.T) {
	ex := &scriptedExecutor{block: true}
	rep, err := Test(context.Background(), Options{Options: invocation.Options{Concurrency: 1, StateDir: testutil.PrivateDir(t), Model: "fake"}, ExampleDeadline: 20 * time.Millisecond, NewExecutor: withExecutor(ex)}, agentRequest(t, threeExamples))
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.calls) != 1 || !strings.Contains(rep.Examples[0].Message, "deadline") || !strings.Contains(rep.Examples[1].Message, "not sent") {
		t.Fatalf("calls %d, messages %q / %q", len(ex.calls), rep.Examples[0].Message, rep.Examples[1].Message)
	}
}

// TestTheInvocationBoundWasNamedNowhere (issue 31 item 12): a run cut by
// the invocation bound said only "the invocation bound expired". It names
// the bound and the ways out: fewer examples per invocation, or more at once.
func TestTheInvocationBoundWasNamedNowhere(t *testing.T) {
	// The bound covers creating the journal too: a second, not 50 ms,
	// so a loaded machine's slow start is not cut before the example.
	ex := &scriptedExecutor{block: true}
	rep, err := Test(context.Background(), Options{Options: invocation.Options{Concurrency: 1, StateDir: testutil.PrivateDir(t), Model: "fake"}, InvocationBound: time.Second, NewExecutor: withExecutor(ex)}, agentRequest(t, threeExamples))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rep.Examples {
		for _, want := range []string{"invocation bound (1s", "--example ID", "--shard K/N", "--concurrency N"} {
			if !strings.Contains(r.Message, want) {
				t.Errorf("example %d: %q does not say %q", i, r.Message, want)
			}
		}
	}
	if got := BoundText(0); got != "5 minutes" {
		t.Errorf("the default bound reads %q", got)
	}
}

func TestUnsafeStateFolderIsRefusedNotRepaired(t *testing.T) {
	home := testutil.PrivateDir(t)
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, agentRequest(t, threeExamples))
	r, ok := invocation.AsRefusal(err)
	if !ok || !strings.Contains(r.Msg, "0755") {
		t.Fatalf("err = %v, want a refusal naming the mode", err)
	}
	fi, _ := os.Stat(home)
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("the folder was repaired to %v", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("created %d entries in an unsafe folder", len(entries))
	}
	if errors.Is(err, os.ErrPermission) {
		t.Errorf("unexpected permission error")
	}
}

// TestStandingRoutesKeepFakeOffline: an endpoint from a front's standing
// configuration (editor settings, MCP startup) does not turn a fake run into
// a refusal, while the same endpoint given explicitly is refused.
func TestStandingRoutesKeepFakeOffline(t *testing.T) {
	opts := Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Endpoint: "http://127.0.0.1:9/v1", JudgeEndpoint: "http://127.0.0.1:9/v1"}}
	req := demo(t, "release-notes.agent.md")
	if _, err := Test(context.Background(), opts, req); err == nil {
		t.Fatal("an explicit endpoint with the fake model was not refused")
	}
	opts.StandingRoutes = true
	rep, err := Test(context.Background(), opts, req)
	if err != nil || rep.Verdict != VerdictPass || rep.Route.Agent.Route != "fake" {
		t.Fatalf("standing endpoint: verdict %v route %+v err %v", rep.Verdict, rep.Route, err)
	}
}
