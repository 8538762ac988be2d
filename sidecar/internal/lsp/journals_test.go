package lsp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// TestListAndClearRunsNeverDeletesARunningOne lists a file's runs, clears
// while another run is executing (it is kept and named), and checks the
// finished one is gone.
func TestListAndClearRunsNeverDeletesARunningOne(t *testing.T) {
	path := writeAgent(t, "greeter.agent.md", greeter)
	var block *blockingExecutor
	c := startServer(t, lsp.Options{NewExecutor: func(j *journal.Journal, p *invocation.Plan) (runner.Executor, func(), error) {
		if block != nil {
			return block, func() {}, nil
		}
		return instantExecutor{}, func() {}, nil
	}})
	c.initialize(nil)
	uri := fileURI(path)

	var empty lsp.ListRunsResult
	c.mustCall(lsp.MethodListRuns, lsp.DocumentParams{URI: uri}, &empty)
	if len(empty.Runs) != 0 || empty.AgentID != "greeter" {
		t.Fatalf("before any run: %+v", empty)
	}
	var cleared lsp.ClearJournalsResult
	c.mustCall(lsp.MethodClearJournals, lsp.ClearJournalsParams{}, &cleared)
	if len(cleared.Removed) != 0 || cleared.Message != "no journals to clear" {
		t.Fatalf("clear with no journals: %+v", cleared)
	}

	var res lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri}, &res)
	finished := res.Report.RunID
	var runs lsp.ListRunsResult
	c.mustCall(lsp.MethodListRuns, lsp.DocumentParams{URI: uri}, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].ID != finished || runs.Runs[0].Status != "finished" || runs.Runs[0].AgentRevision != runs.CurrentRevision {
		t.Fatalf("runs = %+v, want the one finished run of this revision", runs)
	}

	// Start a run that blocks in its first turn.
	block = &blockingExecutor{started: make(chan string, 3), stopped: make(chan string, 3)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan lsp.ReportResult, 1)
	go func() {
		var r lsp.ReportResult
		_, _ = c.conn.Call(ctx, lsp.MethodTest, lsp.TestParams{URI: uri}, &r)
		done <- r
	}()
	select {
	case <-block.started:
	case <-time.After(waitFor):
		t.Fatal("the second run never started")
	}

	err := c.call(lsp.MethodClearJournals, lsp.ClearJournalsParams{RunID: "not-a-run"}, nil)
	if rpcCode(err) != jsonrpc2.InvalidParams {
		t.Fatalf("clear of a bad id: %v, want InvalidParams", err)
	}
	// A well-formed ID with no run: the journal's error with its own next
	// step, said once (problem.Text), as the CLI says it.
	missing := "20200101T000000.000000000Z-00000000"
	err = c.call(lsp.MethodClearJournals, lsp.ClearJournalsParams{RunID: missing}, nil)
	next := (&journal.NotFoundError{}).NextStep()
	if rpcCode(err) != jsonrpc2.InvalidParams || !strings.Contains(err.Error(), "there is no run "+missing) || strings.Count(err.Error(), next) != 1 {
		t.Fatalf("clear of a missing run: %v, want InvalidParams saying %q once", err, next)
	}
	c.mustCall(lsp.MethodClearJournals, lsp.ClearJournalsParams{}, &cleared)
	if len(cleared.Removed) != 1 || cleared.Removed[0] != finished || len(cleared.Kept) != 1 || !strings.Contains(cleared.Message, "still executing") {
		t.Fatalf("clear while running = %+v, want the finished run removed and the running one kept", cleared)
	}
	running := cleared.Kept[0]

	// Stop the running one through its progress token, then list again.
	var created struct {
		Token string `json:"token"`
	}
	for _, m := range c.all() {
		if m.Method == "window/workDoneProgress/create" {
			if err := json.Unmarshal(m.Params, &created); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.notify("window/workDoneProgress/cancel", map[string]any{"token": created.Token})
	r := <-done
	if r.Report == nil || r.Report.RunID != running {
		t.Fatalf("the running run's report = %+v, want run %s", r.Report, running)
	}
	c.mustCall(lsp.MethodListRuns, lsp.DocumentParams{URI: uri}, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].ID != running || runs.Runs[0].Status != "cancelled" {
		t.Fatalf("after clearing: %+v, want only the run that was executing, now cancelled", runs.Runs)
	}
}

// instantExecutor answers at once without journaling: its turns can never
// pass, which is all a listing test needs.
type instantExecutor struct{}

func (instantExecutor) Execute(context.Context, runner.Turn) (runner.Outcome, error) {
	return runner.Outcome{Answer: "Hello", Completed: true, Problem: "not journaled"}, nil
}
