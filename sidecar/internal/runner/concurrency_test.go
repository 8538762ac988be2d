package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// mixedAgent has n examples on the fake model with every kind of outcome:
// passes, assertion failures, passing and failing llmJudge assertions on
// the fake judge, and an inconclusive judge (unknown, the run goes on).
func mixedAgent(n int) string {
	var b strings.Builder
	b.WriteString("---\nname: mixed\nmodel: fake\n---\nYou answer briefly.\n\nReply with exactly `Answer:` followed by the input\n\n## Examples\n\n```yaml\n")
	for i := range n {
		fmt.Fprintf(&b, "- id: ex-%02d\n  input: Question number %d\n  assert:\n", i, i)
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "    - contains: \"Answer:\"\n    - regex: \"number %d\\\\b\"\n", i)
		case 1:
			b.WriteString("    - contains: \"Answer:\"\n    - contains: nowhere-in-the-answer\n")
		case 2:
			fmt.Fprintf(&b, "    - llmJudge:\n        rubric: The answer mentions `number %d`\n        judgeModel: fake\n", i)
		case 3:
			b.WriteString("    - llmJudge:\n        rubric: The answer mentions `a missing phrase`\n        judgeModel: fake\n")
		case 4:
			b.WriteString("    - notContains: TODO\n    - llmJudge:\n        rubric: The answer is good\n        judgeModel: fake\n")
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// normalizedReport is the report's JSON with what differs between any two
// runs (durations, the run's identity) removed.
func normalizedReport(t *testing.T, rep *Report) string {
	t.Helper()
	c := *rep
	c.DurationMs, c.RunID, c.JournalPath = 0, "", ""
	c.Examples = append([]ExampleResult(nil), rep.Examples...)
	for i := range c.Examples {
		c.Examples[i].DurationMs = 0
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConcurrencyChangesOnlyTime runs the same file at concurrency 1 and 8,
// as Test and as Run: the verdicts and the report bytes (durations and the
// run's identity aside) are the same, and results stream in file order.
func TestConcurrencyChangesOnlyTime(t *testing.T) {
	const n = 25
	req := agentRequest(t, mixedAgent(n))
	for _, cmd := range []string{"test", "run"} {
		t.Run(cmd, func(t *testing.T) {
			reports := map[int]string{}
			for _, c := range []int{1, 8} {
				var streamed, finished []string
				opts := Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Concurrency: c}, OnExample: func(ex ExampleResult) { streamed = append(streamed, ex.ID) }, OnFinished: func(ex ExampleResult) { finished = append(finished, ex.ID) }}
				fn := Test
				if cmd == "run" {
					fn = Run
				}
				rep, err := fn(context.Background(), opts, req)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Summary.Pass == 0 || rep.Summary.Fail == 0 || rep.Summary.Unknown == 0 {
					t.Fatalf("concurrency %d: summary %+v, want passes, failures and unknowns", c, rep.Summary)
				}
				for i, id := range streamed {
					if want := fmt.Sprintf("ex-%02d", i); id != want {
						t.Fatalf("concurrency %d: streamed %v, want file order", c, streamed)
					}
				}
				if len(streamed) != n || len(finished) != n {
					t.Fatalf("concurrency %d: %d streamed, %d finished, want %d", c, len(streamed), len(finished), n)
				}
				reports[c] = normalizedReport(t, rep)
			}
			if reports[1] != reports[8] {
				t.Errorf("reports differ:\nconcurrency 1: %s\nconcurrency 8: %s", reports[1], reports[8])
			}
		})
	}
}

// slowEndpoint is an OpenAI-compatible endpoint on 127.0.0.1 whose handler
// a test controls per request: it records arrivals and in-flight requests,
// and whether each ended because the client went away.
type slowEndpoint struct {
	srv     *httptest.Server
	mu      sync.Mutex
	arrived []string // user messages, in arrival order
	live    int      // handlers running
	torn    int      // handlers that saw their request cancelled
	changed chan struct{}
}

func newSlowEndpoint(t *testing.T, handle func(ctx context.Context, user string) (int, string)) *slowEndpoint {
	t.Helper()
	e := &slowEndpoint{changed: make(chan struct{}, 1024)}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		user := ""
		for _, m := range req.Messages {
			if m.Role == "user" {
				user = m.Content
			}
		}
		e.update(func() { e.arrived = append(e.arrived, user); e.live++ })
		defer e.update(func() { e.live-- })
		status, body := handle(r.Context(), user)
		if r.Context().Err() != nil {
			e.update(func() { e.torn++ })
			return
		}
		if body == "" {
			body = okBody(req.Model, "Answer: "+user)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *slowEndpoint) update(f func()) {
	e.mu.Lock()
	f()
	e.mu.Unlock()
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

// waitUntil waits for cond (checked under the lock); after waitLong it
// reports an error and returns false. It may be called from a handler.
func (e *slowEndpoint) waitUntil(t *testing.T, what string, cond func() bool) bool {
	t.Helper()
	deadline := time.After(waitLong)
	for {
		e.mu.Lock()
		ok := cond()
		e.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-e.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Errorf("timed out waiting until %s", what)
			return false
		}
	}
}

// waitLong bounds waits for something that must happen; it is a hang
// guard, not a timing assertion.
const waitLong = 30 * time.Second

// TestEndpointFailureStopsSendsAndCancelsInFlight: at concurrency 4 the
// third example's request fails while three others are in flight. Nothing
// is sent after the failure, the three in flight are cancelled (every one of
// their requests torn down, each unknown, never pass), and the rest are
// reported not sent.
func TestEndpointFailureStopsSendsAndCancelsInFlight(t *testing.T) {
	const n = 12
	var srv *slowEndpoint
	srv = newSlowEndpoint(t, func(ctx context.Context, user string) (int, string) {
		if strings.HasPrefix(user, "Question number 2 ") {
			// Fail only once all four are in flight.
			srv.waitUntil(t, "four requests are in flight", func() bool { return srv.live == 4 })
			return http.StatusInternalServerError, `{"error":{"message":"overloaded"}}`
		}
		<-ctx.Done() // the others answer only when cancelled
		return 0, ""
	})
	src := strings.Replace(string(generatedAgent(n)), "model: fake", "model: kmx-slow-model", 1)
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Endpoint: srv.srv.URL + "/v1", Concurrency: 4}}, invocation.Request{Path: "slow.agent.md", Source: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	// Every request in flight was torn down: no handler is left waiting
	// for a client that has moved on.
	if !srv.waitUntil(t, "every cancelled request is torn down", func() bool { return srv.live == 0 }) {
		t.FailNow()
	}
	srv.mu.Lock()
	arrived, torn := append([]string(nil), srv.arrived...), srv.torn
	srv.mu.Unlock()
	if len(arrived) != 4 || torn != 3 {
		t.Fatalf("endpoint saw %d requests %v and %d torn down; want 4 and 3 (nothing sent after the failure)", len(arrived), arrived, torn)
	}
	if rep.Verdict == VerdictPass || rep.Summary.Pass != 0 || rep.Summary.Unknown != n {
		t.Fatalf("verdict %q summary %+v, want every example unknown", rep.Verdict, rep.Summary)
	}
	for i, ex := range rep.Examples {
		var want string
		switch {
		case i == 2:
			want = "" // the failure itself, in the route's own words
		case i < 4:
			want = "cancelled: example ex-00002 failed to execute"
		default:
			want = "not sent: example ex-00002 failed to execute"
		}
		if ex.Verdict != VerdictUnknown || (want != "" && ex.Message != want) || (want == "" && ex.Message == "") {
			t.Errorf("example %d: %q %q, want unknown %q", i, ex.Verdict, ex.Message, want)
		}
	}
	// The journal says the same: four turns, none verified, three cancelled.
	in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if in.Summary.Turns != 4 || in.Summary.Verified != 0 || in.Summary.Cancelled != 3 || in.LiveCalls != 0 {
		t.Errorf("journal summary %+v live %d, want 4 turns, 0 verified, 3 cancelled", in.Summary, in.LiveCalls)
	}
}

// TestConcurrentJournalReplaysWithZeroModelCalls: a run at concurrency 8
// on a real endpoint, judge samples included, journals every turn in its
// own Session; inspecting the journal replays every one of them and sends
// nothing.
func TestConcurrentJournalReplaysWithZeroModelCalls(t *testing.T) {
	const n, judged = 24, 8 // every third example is judged
	srv := newChatServer(t, false, func(c chatCall) chatReply {
		if c.System == judge.Instructions {
			return chatReply{body: judgeBody(c.Model, intp(90), "fine")}
		}
		return echo(c)
	})
	var b strings.Builder
	b.WriteString("---\nname: judged-many\nmodel: kmx-agent-model\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n")
	for i := range n {
		fmt.Fprintf(&b, "- id: ex-%02d\n  input: question %d\n  assert:\n    - contains: \"question %d\"\n", i, i, i)
		if i%3 == 0 {
			b.WriteString("    - llmJudge:\n        rubric: The answer repeats the question\n")
		}
	}
	b.WriteString("```\n")
	home := testutil.PrivateDir(t)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Endpoint: srv.base(), Concurrency: 8}}, agentRequest(t, b.String()))
	if err != nil || rep.Verdict != VerdictPass || rep.Summary.Pass != n {
		t.Fatalf("verdict %q summary %+v err %v", rep.Verdict, rep.Summary, err)
	}
	sent := len(srv.received())
	if want := n + 2*judged; sent != want {
		t.Fatalf("endpoint saw %d requests, want %d (one per example, two per judged example)", sent, want)
	}
	in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if in.LiveCalls != 0 || in.Summary.Turns != n || in.Summary.Verified != n || in.Summary.JudgeSamples != 2*judged {
		t.Fatalf("inspection summary %+v, live calls %d", in.Summary, in.LiveCalls)
	}
	sessions := map[string]bool{}
	for _, tr := range in.Turns {
		sessions[tr.SessionID] = true
		for _, s := range tr.JudgeSamples {
			if s.State != readback.TurnVerified {
				t.Errorf("judge sample of %s: %s", tr.Example, s.State)
			}
			sessions[s.SessionID] = true
		}
	}
	if len(sessions) != n+2*judged {
		t.Errorf("%d distinct sessions, want one per turn", len(sessions))
	}
	if after := len(srv.received()); after != sent {
		t.Errorf("inspection sent %d requests", after-sent)
	}
}

// TestRetentionAndClearKeepARunningConcurrentRun: while a concurrent run has
// requests in flight, retention down to one run and both forms of Clear
// leave it alone; it then finishes, passes and replays.
func TestRetentionAndClearKeepARunningConcurrentRun(t *testing.T) {
	release := make(chan struct{})
	srv := newSlowEndpoint(t, func(ctx context.Context, user string) (int, string) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return http.StatusOK, ""
	})
	home := testutil.PrivateDir(t)
	dir, err := journal.EnsureDir(home)
	if err != nil {
		t.Fatal(err)
	}
	// An older finished run that retention and Clear may remove.
	old, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, demo(t, "release-notes.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(generatedAgent(8)), "model: fake", "model: kmx-slow-model", 1)
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Endpoint: srv.srv.URL + "/v1", Concurrency: 4}}, invocation.Request{Path: "slow.agent.md", Source: []byte(src)})
		done <- result{rep, err}
	}()
	if !srv.waitUntil(t, "four requests are in flight", func() bool { return srv.live == 4 }) {
		close(release)
		t.FailNow()
	}

	runs, err := journal.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var running string
	for _, r := range runs {
		if r.Status == journal.RunRunning {
			running = r.ID
		}
	}
	if running == "" {
		t.Fatalf("no running run listed: %+v", runs)
	}
	if _, err := journal.Retain(dir, 1); err != nil {
		t.Fatalf("retain: %v", err)
	}
	var re *journal.RunningError
	if _, err := journal.Clear(dir, running); !errors.As(err, &re) {
		t.Fatalf("clear of the running run: %v, want a RunningError", err)
	}
	cleared, err := journal.Clear(dir, "")
	if !errors.As(err, &re) {
		t.Fatalf("clear all: %v, want a RunningError for the running run", err)
	}
	for _, id := range cleared.Removed {
		if id == running {
			t.Fatal("clear removed the running run")
		}
	}
	if _, err := os.Stat(old.JournalPath); !os.IsNotExist(err) {
		t.Errorf("the finished run was not removed: %v", err)
	}
	close(release)
	res := <-done
	if res.err != nil || res.rep.Verdict != VerdictPass || res.rep.RunID != running {
		t.Fatalf("run: verdict %v err %v id %q (want %q)", res.rep.Verdict, res.err, res.rep.RunID, running)
	}
	in, err := readback.Inspect(context.Background(), dir, running)
	if err != nil || in.Summary.Verified != 8 || in.LiveCalls != 0 {
		t.Fatalf("inspect: %+v err %v", in, err)
	}
}

// TestConcurrencyOutOfRangeIsRefusedBeforeAnything: a concurrency outside
// 1 to 32 is refused before a journal exists or anything is sent.
func TestConcurrencyOutOfRangeIsRefusedBeforeAnything(t *testing.T) {
	for _, c := range []int{-1, invocation.MaxConcurrency + 1} {
		home := testutil.PrivateDir(t)
		_, r := mustRefuse(t, false, Options{Options: invocation.Options{StateDir: home, Model: "fake", Concurrency: c}}, demo(t, "release-notes.agent.md"))
		if !strings.Contains(r.Msg, "outside 1 to 32") || !strings.Contains(r.Next, "from 1 to 32") {
			t.Errorf("concurrency %d: %q / %q", c, r.Msg, r.Next)
		}
		if names := testutil.DirNames(t, home); len(names) != 0 {
			t.Errorf("concurrency %d: the refusal created %v", c, names)
		}
	}
}

// TestJudgeSamplesRunAtOnceOnThePool: an example's two judge samples are
// sent together when the pool has a free slot (here: one example at
// concurrency 4, so the judge endpoint answers only once both samples are
// in flight), and one after the other, in order, at concurrency 1, where
// the example's one slot is all there is.
func TestJudgeSamplesRunAtOnceOnThePool(t *testing.T) {
	src := "---\nname: judged\nmodel: " + compatAgentModel + "\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
		"- id: judged\n  input: write a haiku\n  assert:\n    - llmJudge:\n        rubric: The answer is a haiku\n        judgeModel: judge-m\n```\n"
	for _, c := range []int{1, 4} {
		t.Run(fmt.Sprintf("concurrency=%d", c), func(t *testing.T) {
			var mu sync.Mutex
			inFlight, most, arrived := 0, 0, 0
			both := make(chan struct{})
			srv := newChatServer(t, false, func(call chatCall) chatReply {
				if call.Model != "judge-m" {
					return echo(call)
				}
				mu.Lock()
				inFlight++
				arrived++
				most = max(most, inFlight)
				if arrived == 2 {
					close(both)
				}
				mu.Unlock()
				if c > 1 {
					select {
					case <-both:
					case <-time.After(30 * time.Second):
						return chatReply{status: 500, body: "the second judge sample never came while the first was in flight"}
					}
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
				return chatReply{body: judgeBody(call.Model, intp(90), "fine")}
			})
			rep, err := Test(context.Background(), Options{Options: invocation.Options{Concurrency: c, StateDir: testutil.PrivateDir(t), Endpoint: srv.base()}}, agentRequest(t, src))
			if err != nil {
				t.Fatalf("Test: %v", err)
			}
			if ex := rep.Examples[0]; ex.Verdict != VerdictPass || !ex.Verified {
				t.Fatalf("verdict %q (%s), want a verified pass", ex.Verdict, ex.Message)
			}
			want := 2
			if c == 1 {
				want = 1
			}
			mu.Lock()
			defer mu.Unlock()
			if most != want || arrived != 2 {
				t.Fatalf("judge samples in flight at once = %d (of %d sent), want %d", most, arrived, want)
			}
		})
	}
}
