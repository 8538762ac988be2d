package lsp_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

type progressJ struct {
	Token json.RawMessage   `json:"token"`
	Value lsp.ProgressValue `json:"value"`
}

// progressOf returns the $/progress values received from index from on.
func (c *client) progressOf(from int) []lsp.ProgressValue {
	var out []lsp.ProgressValue
	for _, m := range c.all()[from:] {
		if m.Method != "$/progress" {
			continue
		}
		var p progressJ
		if err := json.Unmarshal(m.Params, &p); err != nil {
			c.t.Fatal(err)
		}
		out = append(out, p.Value)
	}
	return out
}

func TestTestFileReportsVerdictsRangesAndProgress(t *testing.T) {
	path := writeAgent(t, "greeter.agent.md", greeter)
	c := startServer(t, lsp.Options{Version: "test"})
	c.initialize(nil)
	uri := fileURI(path)
	c.open(uri, 3, greeter)

	from := c.count()
	var res lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri}, &res)
	rep := res.Report
	if res.DocumentVersion != 3 || rep == nil || rep.Label != "local preview" || rep.Schema != runner.ReportSchema {
		t.Fatalf("result = %+v", res)
	}
	if rep.Verdict != "fail" || rep.Summary.Pass != 2 || rep.Summary.Fail != 1 || !rep.Journaled {
		t.Fatalf("verdict %q summary %+v journaled %v, want fail 2/1 journaled", rep.Verdict, rep.Summary, rep.Journaled)
	}
	second := rep.Examples[1]
	if second.ID != "second" || second.Verdict != "fail" || second.Range == nil || second.Range.Start.Line != 14 {
		t.Fatalf("second = %+v", second)
	}
	if second.DecidingRange == nil || second.DecidingRange.Start.Line != 18 {
		t.Fatalf("deciding range %+v, want the Goodbye assertion on line 18", second.DecidingRange)
	}

	c.waitMessage(from, "$/progress", func(raw json.RawMessage) bool { return strings.Contains(string(raw), `"end"`) })
	vals := c.progressOf(from)
	if len(vals) != 5 || vals[0].Kind != "begin" || vals[4].Kind != "end" {
		t.Fatalf("progress = %+v, want begin, three reports, end", vals)
	}
	// Progress counts examples as they finish, in whatever order they
	// finish (the default concurrency runs all three at once).
	got := map[string]bool{}
	for i, v := range vals[1:4] {
		got[v.Message] = true
		if want := (i + 1) * 100 / 3; v.Percentage == nil || *v.Percentage != want {
			t.Errorf("report %d = %+v, want %d%%", i, v, want)
		}
	}
	if !got["first: pass"] || !got["second: fail"] || !got["third: pass"] {
		t.Errorf("reports = %+v", vals[1:4])
	}
	if vals[4].Outcome != lsp.OutcomeCompleted || !strings.Contains(vals[4].Message, "local preview") {
		t.Errorf("end = %+v, want completed", vals[4])
	}
	// The server created the token before using it.
	if _, i := c.waitMessage(from, "window/workDoneProgress/create", nil); i < from {
		t.Fatal("no window/workDoneProgress/create")
	}
}

func TestRunExampleAndAdHocInput(t *testing.T) {
	path := writeAgent(t, "greeter.agent.md", greeter)
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	uri := fileURI(path)

	// Not open: the file on disk is used.
	var res lsp.ReportResult
	c.mustCall(lsp.MethodRun, lsp.ExampleParams{URI: uri, ExampleID: "first"}, &res)
	ex := res.Report.Examples
	if len(ex) != 1 || ex[0].Verdict != "pass" || ex[0].Answer == nil || *ex[0].Answer != "Hello: Ada" {
		t.Fatalf("run first = %+v", ex)
	}
	input := "Margaret"
	c.mustCall(lsp.MethodRun, lsp.ExampleParams{URI: uri, Input: &input}, &res)
	ex = res.Report.Examples
	if len(ex) != 1 || !ex[0].AdHoc || ex[0].Answer == nil || *ex[0].Answer != "Hello: Margaret" {
		t.Fatalf("run with input = %+v", ex)
	}
}

func TestRefusalsAreResultsWithWhatToChange(t *testing.T) {
	token := "gh" + "p_" + strings.Repeat("Zx9", 12)
	tests := []struct {
		name   string
		text   string
		params lsp.ExampleParams
		wantIn string
	}{
		{"duplicate ids", strings.Replace(greeter, "- id: second", "- id: first", 1), lsp.ExampleParams{ExampleID: "first"}, "error"},
		{"unfinished", unfinished, lsp.ExampleParams{ExampleID: "one"}, "still being written"},
		{"unknown example", greeter, lsp.ExampleParams{ExampleID: "nope"}, "no example with id"},
		{"credential-shaped input", greeter, lsp.ExampleParams{Input: &token}, "credential"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeAgent(t, "r.agent.md", tt.text)
			c := startServer(t, lsp.Options{})
			c.initialize(nil)
			p := tt.params
			p.URI = fileURI(path)
			from := c.count()
			var res json.RawMessage
			c.mustCall(lsp.MethodRun, p, &res)
			var rr lsp.ReportResult
			if err := json.Unmarshal(res, &rr); err != nil {
				t.Fatal(err)
			}
			if rr.Report.Verdict != "refused" || rr.Report.Refusal == nil || !strings.Contains(rr.Report.Refusal.Message, tt.wantIn) || rr.Report.Refusal.Next == "" {
				t.Fatalf("report = %+v refusal %+v", rr.Report, rr.Report.Refusal)
			}
			if strings.Contains(string(res), token) {
				t.Fatal("the result echoes the credential value")
			}
			c.waitMessage(from, "$/progress", func(raw json.RawMessage) bool { return strings.Contains(string(raw), `"failed"`) })
		})
	}
}

// blockingExecutor blocks every turn until its context ends, recording the
// examples it was asked to send.
type blockingExecutor struct {
	mu      sync.Mutex
	sent    []string
	started chan string
	stopped chan string
}

func (e *blockingExecutor) Execute(ctx context.Context, t runner.Turn) (runner.Outcome, error) {
	e.mu.Lock()
	e.sent = append(e.sent, t.ExampleID)
	e.mu.Unlock()
	e.started <- t.ExampleID
	<-ctx.Done()
	e.stopped <- t.ExampleID
	return runner.Outcome{Journaled: true, Cancelled: true, Problem: "cancelled"}, nil
}

func TestCancellationStopsTheRunInFlight(t *testing.T) {
	tests := []struct {
		name   string
		cancel func(c *client, callCancel context.CancelFunc, token json.RawMessage)
	}{
		{"$/cancelRequest", func(_ *client, callCancel context.CancelFunc, _ json.RawMessage) { callCancel() }},
		{"progress cancel button", func(c *client, _ context.CancelFunc, token json.RawMessage) {
			c.notify("window/workDoneProgress/cancel", map[string]any{"token": token})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exec := &blockingExecutor{started: make(chan string, 3), stopped: make(chan string, 3)}
			path := writeAgent(t, "greeter.agent.md", greeter)
			c := startServer(t, lsp.Options{NewExecutor: func(*journal.Journal, *invocation.Plan) (runner.Executor, func(), error) {
				return exec, func() {}, nil
			}})
			// One at a time: this checks that nothing after the first example
			// is sent once the run is cancelled.
			c.initialize(lsp.InitializationOptions{Settings: lsp.Settings{Concurrency: 1}})
			uri := fileURI(path)
			from := c.count()

			ctx, callCancel := context.WithCancel(context.Background())
			defer callCancel()
			done := make(chan error, 1)
			var res lsp.ReportResult
			go func() {
				// cancellableCall sends $/cancelRequest with the request's
				// id when ctx ends, as vscode-jsonrpc does.
				done <- cancellableCall(ctx, c.conn, lsp.MethodTest, lsp.TestParams{URI: uri}, &res)
			}()
			select {
			case id := <-exec.started:
				if id != "first" {
					t.Fatalf("first turn sent for %q", id)
				}
			case <-time.After(waitFor):
				t.Fatal("the run never reached the executor")
			}
			// While the run is in flight the server keeps answering.
			var lenses json.RawMessage
			c.mustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": uri}}, &lenses)

			begin, _ := c.waitMessage(from, "$/progress", func(raw json.RawMessage) bool { return strings.Contains(string(raw), `"begin"`) })
			var bp progressJ
			_ = json.Unmarshal(begin.Params, &bp)
			tt.cancel(c, callCancel, bp.Token)

			select {
			case <-exec.stopped:
			case <-time.After(waitFor):
				t.Fatal("the turn in flight was not stopped")
			}
			c.waitMessage(from, "$/progress", func(raw json.RawMessage) bool { return strings.Contains(string(raw), `"cancelled"`) })
			exec.mu.Lock()
			sent := append([]string(nil), exec.sent...)
			exec.mu.Unlock()
			if len(sent) != 1 {
				t.Fatalf("examples sent: %v; later examples must not be sent after cancellation", sent)
			}
			err := <-done
			if tt.name == "$/cancelRequest" {
				return // the client gave up on the reply
			}
			if err != nil {
				t.Fatalf("after the progress cancel button the request must still answer: %v", err)
			}
			var verdicts []string
			for _, ex := range res.Report.Examples {
				verdicts = append(verdicts, ex.ID+"="+ex.Verdict+" ("+ex.Message+")")
			}
			want := "first=unknown (cancelled), second=unknown (not sent: cancelled), third=unknown (not sent: cancelled)"
			if strings.Join(verdicts, ", ") != want {
				t.Fatalf("verdicts %s\nwant %s", strings.Join(verdicts, ", "), want)
			}
		})
	}
}

// TestTestFileTrialsAndFromRun: kmx/test takes trials (each example's
// counts in the report) and fromRun (a re-grade of a journaled run with
// zero agent model calls).
func TestTestFileTrialsAndFromRun(t *testing.T) {
	path := writeAgent(t, "greeter.agent.md", greeter)
	c := startServer(t, lsp.Options{Version: "test"})
	c.initialize(nil)
	uri := fileURI(path)
	c.open(uri, 1, greeter)

	var res lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri, Trials: 2}, &res)
	rep := res.Report
	if rep == nil || rep.Trials != 2 || len(rep.Examples) != 3 {
		t.Fatalf("trials 2: %+v", res)
	}
	for _, ex := range rep.Examples {
		if ex.Trials == nil || ex.Trials.N != 2 || len(ex.TrialResults) != 2 {
			t.Errorf("example %s: trials %+v", ex.ID, ex.Trials)
		}
	}
	var g lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri, FromRun: rep.RunID}, &g)
	if g.Report == nil || g.Report.Regrade == nil || g.Report.Regrade.SourceRun != rep.RunID || g.Report.Regrade.AgentCalls != 0 || g.Report.Verdict != rep.Verdict {
		t.Fatalf("fromRun: %+v", g.Report)
	}
}
