package sessions

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

const fakeInstructions = "You draft release notes.\nReply with exactly `Release notes:` followed by the input"

var fakeIdentity = &sessionspb.ModelIdentity{Route: route.Fake, Model: route.Fake}

// testRun is one run journal in a temporary folder.
type testRun struct {
	dir string
	j   *journal.Journal
}

func newRun(t testing.TB) *testRun {
	t.Helper()
	root := t.TempDir()
	// The journal refuses a folder others can open; t.TempDir follows umask.
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := journal.EnsureDir(root)
	if err != nil {
		t.Fatalf("journal folder: %v", err)
	}
	j, err := journal.Create(context.Background(), dir, journal.RunMeta{
		KmxVersion: "test", AgentID: "release-notes", AgentRevision: strings.Repeat("0", 64), Command: "test",
	})
	if err != nil {
		t.Fatalf("create journal: %v", err)
	}
	r := &testRun{dir: dir, j: j}
	t.Cleanup(func() { _ = j.Finish(context.Background(), journal.StatusFinished) })
	return r
}

// finish ends the run, as a real invocation does before anything inspects it.
func (r *testRun) finish(t testing.TB) {
	t.Helper()
	if err := r.j.Finish(context.Background(), journal.StatusFinished); err != nil {
		t.Fatalf("finish journal: %v", err)
	}
}

// reopen opens the run's journal for reading, through its own connection:
// what it sees was committed.
func (r *testRun) reopen(t testing.TB) *journal.Journal {
	t.Helper()
	j, err := journal.Open(context.Background(), r.dir, r.j.ID())
	if err != nil {
		t.Fatalf("open journal: %v", err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func fakeResolver(string, route.Identity) (route.Model, error) { return route.NewFake(), nil }

// noLiveResolver fails the test if anything asks it for a model: replay
// and verification must never resolve one.
func noLiveResolver(t testing.TB) harness.Resolver {
	return func(string, route.Identity) (route.Model, error) {
		t.Error("a live model was resolved during verification")
		return nil, errors.New("no live model in this test")
	}
}

func startEmbedded(t testing.TB, j *journal.Journal, resolve harness.Resolver) sessionspb.SessionsClient {
	t.Helper()
	e, err := Start(context.Background(), Options{Journal: j, Resolve: resolve})
	if err != nil {
		t.Fatalf("start sessions: %v", err)
	}
	t.Cleanup(e.Close)
	return e.Client()
}

func createSession(t testing.TB, c sessionspb.SessionsClient) string {
	t.Helper()
	resp, err := c.CreateSession(context.Background(), &sessionspb.CreateSessionRequest{
		Purpose: harness.PurposeAgent, ExampleId: "weekly", Model: fakeIdentity,
	})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	return resp.GetSessionId()
}

func runTurn(t testing.TB, c sessionspb.SessionsClient, id, input string) *sessionspb.RunTurnResponse {
	t.Helper()
	resp, err := c.RunTurn(context.Background(), &sessionspb.RunTurnRequest{SessionId: id, Instructions: fakeInstructions, Input: input})
	if err != nil {
		t.Fatalf("run turn: %v", err)
	}
	return resp
}

func TestTurnWritesFiveCommittedRecords(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, fakeResolver)
	id := createSession(t, c)
	resp := runTurn(t, c, id, "week 48")
	if resp.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED || resp.GetAnswer() != "Release notes: week 48" ||
		resp.GetTurn() != 1 || resp.GetReportedModel() != route.Fake {
		t.Fatalf("run turn = %v", resp)
	}

	// Read back through a second connection: only committed records show.
	recs, err := run.reopen(t).Records(context.Background(), id)
	if err != nil {
		t.Fatalf("records: %v", err)
	}
	if len(recs) != len(journal.TurnKinds) {
		t.Fatalf("turn wrote %d records, want %d", len(recs), len(journal.TurnKinds))
	}
	sum, size, _ := harness.RequestDigest(route.ChatRequest(route.Fake, fakeInstructions, "week 48"))
	usage := route.FakeUsage(route.ChatRequest(route.Fake, fakeInstructions, "week 48"), route.Completion{Text: "Release notes: week 48"})
	// The terminal journals the turn's duration, which no test can know.
	var term journal.TurnTerminal
	if err := journal.Decode(recs[len(recs)-1].Payload, &term); err != nil || term.DurationUs <= 0 {
		t.Fatalf("terminal %s has no duration (%v)", recs[len(recs)-1].Payload, err)
	}
	want := []struct {
		turn    int
		payload any
	}{
		{0, journal.SessionPlaced{SessionID: id, Harness: harness.Chat, Purpose: harness.PurposeAgent, ExampleID: "weekly",
			Model: journal.ModelIdentity{Route: route.Fake, Model: route.Fake}}},
		{1, journal.TurnStarted{Turn: 1, Instructions: fakeInstructions, Input: "week 48",
			Model: journal.ModelIdentity{Route: route.Fake, Model: route.Fake}}},
		{1, journal.ModelRequest{Turn: 1, Model: route.Fake, SHA256: sum, Bytes: size}},
		{1, journal.ModelCompletion{Turn: 1, Model: route.Fake, Text: "Release notes: week 48", FinishReason: "stop",
			Usage: &journal.Usage{PromptTokens: usage.PromptTokens, CompletionTokens: usage.CompletionTokens, TotalTokens: usage.TotalTokens}}},
		{1, journal.TurnTerminal{Turn: 1, State: journal.StateCompleted, Answer: "Release notes: week 48", DurationUs: term.DurationUs}},
	}
	for i, r := range recs {
		if r.Kind != journal.TurnKinds[i] || r.Version != journal.SchemaVersion || r.Turn != want[i].turn || r.SessionID != id {
			t.Errorf("record %d = %s v%d turn %d session %s", i, r.Kind, r.Version, r.Turn, r.SessionID)
		}
		wantJSON, _ := journal.Encode(want[i].payload)
		if string(r.Payload) != string(wantJSON) {
			t.Errorf("record %d payload = %s, want %s", i, r.Payload, wantJSON)
		}
	}

	v, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: id, Turn: 1})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if !v.GetVerified() || v.GetAnswer() != "Release notes: week 48" || v.GetLiveCalls() != 0 || v.GetRecords() != 5 || v.GetReason() != "" {
		t.Errorf("verify = %v", v)
	}
}

// committedWatcher is a model that, before answering, waits until the
// model.request record is readable through a separate connection: the
// request is journaled while the model is still working.
type committedWatcher struct {
	run *testRun
	t   *testing.T
}

func (m committedWatcher) Identity() route.Identity {
	return route.Identity{Route: route.Fake, Model: route.Fake}
}

func (m committedWatcher) Complete(ctx context.Context, req route.Request) (route.Completion, error) {
	j, err := journal.Open(ctx, m.run.dir, m.run.j.ID())
	if err != nil {
		return route.Completion{}, err
	}
	defer j.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		recs, err := j.Records(ctx, "")
		if err != nil {
			return route.Completion{}, err
		}
		if n := len(recs); n > 0 && recs[n-1].Kind == journal.KindModelRequest {
			return route.Completion{Model: req.Model, Text: "ok", FinishReason: "stop"}, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	m.t.Error("model.request was not committed while the model was working")
	return route.Completion{}, errors.New("request not committed")
}

func TestRequestIsCommittedBeforeCompletion(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, func(string, route.Identity) (route.Model, error) {
		return committedWatcher{run: run, t: t}, nil
	})
	id := createSession(t, c)
	if resp := runTurn(t, c, id, "x"); resp.GetAnswer() != "ok" {
		t.Errorf("answer = %q (error %q)", resp.GetAnswer(), resp.GetError())
	}
}

func TestTurnsNumberFromOnePerSession(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, fakeResolver)
	a, b := createSession(t, c), createSession(t, c)
	if a == b || a > b {
		t.Errorf("session IDs %q, %q are not unique and increasing", a, b)
	}
	for i, tt := range []struct {
		id       string
		wantTurn int32
	}{{a, 1}, {a, 2}, {b, 1}, {a, 3}} {
		resp := runTurn(t, c, tt.id, "n")
		if resp.GetTurn() != tt.wantTurn {
			t.Errorf("step %d: turn = %d, want %d", i, resp.GetTurn(), tt.wantTurn)
		}
	}
	for _, tt := range []struct {
		id   string
		turn int32
	}{{a, 1}, {a, 2}, {a, 3}, {b, 1}} {
		v, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: tt.id, Turn: tt.turn})
		if err != nil || !v.GetVerified() {
			t.Errorf("verify %s turn %d = %v, %v", tt.id, tt.turn, v, err)
		}
	}
	v, err := c.VerifyTurn(context.Background(), &sessionspb.VerifyTurnRequest{SessionId: b, Turn: 2})
	if err != nil || v.GetVerified() || v.GetReason() != ReasonMissingPrefix+string(journal.KindTurnStarted) {
		t.Errorf("verify of a turn never run = %v, %v", v, err)
	}
}

func TestCreateSessionRefusals(t *testing.T) {
	tests := []struct {
		name     string
		req      *sessionspb.CreateSessionRequest
		wantCode codes.Code
		wantText string
	}{
		{name: "a judge is tool-free",
			req:      &sessionspb.CreateSessionRequest{Purpose: "judge", Model: fakeIdentity, Tools: []*sessionspb.ToolSpec{{Name: "github_list_merged_prs", State: "Enabled", Source: "unavailable"}}},
			wantCode: codes.InvalidArgument, wantText: `a judge session is tool-free`},
		{name: "duplicate tool",
			req:      &sessionspb.CreateSessionRequest{Purpose: "agent", Model: fakeIdentity, Tools: []*sessionspb.ToolSpec{{Name: "a"}, {Name: "a"}}},
			wantCode: codes.InvalidArgument, wantText: `tool "a" is declared twice`},
		{name: "unknown purpose",
			req:      &sessionspb.CreateSessionRequest{Purpose: "other", Model: fakeIdentity},
			wantCode: codes.InvalidArgument, wantText: `purpose "other" is not known`},
		{name: "no model",
			req:      &sessionspb.CreateSessionRequest{Purpose: "agent"},
			wantCode: codes.InvalidArgument, wantText: "no model identity"},
	}
	run := newRun(t)
	c := startEmbedded(t, run.j, fakeResolver)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.CreateSession(context.Background(), tt.req)
			if status.Code(err) != tt.wantCode || !strings.Contains(status.Convert(err).Message(), tt.wantText) {
				t.Errorf("error = %v, want %v containing %q", err, tt.wantCode, tt.wantText)
			}
		})
	}
	if recs, err := run.j.Records(context.Background(), ""); err != nil || len(recs) != 0 {
		t.Errorf("refused placements journaled %d records (%v)", len(recs), err)
	}
}

func TestRunTurnUnknownSession(t *testing.T) {
	run := newRun(t)
	c := startEmbedded(t, run.j, fakeResolver)
	_, err := c.RunTurn(context.Background(), &sessionspb.RunTurnRequest{SessionId: "s00000009-00000000", Input: "x"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("error = %v, want NotFound", err)
	}
}

// blockingModel blocks until its context ends and reports that it saw it.
type blockingModel struct {
	started  chan struct{}
	observed chan struct{}
}

func (m *blockingModel) Identity() route.Identity {
	return route.Identity{Route: route.Fake, Model: route.Fake}
}

func (m *blockingModel) Complete(ctx context.Context, _ route.Request) (route.Completion, error) {
	close(m.started)
	<-ctx.Done()
	close(m.observed)
	return route.Completion{}, ctx.Err()
}

// waitForKind polls until the session's last committed record has kind k.
// The server writes a cancelled turn's terminal after its caller returned.
func waitForKind(t *testing.T, j *journal.Journal, id string, k journal.Kind) []journal.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		recs, err := j.Records(context.Background(), id)
		if err != nil {
			t.Fatalf("records: %v", err)
		}
		if n := len(recs); n > 0 && recs[n-1].Kind == k {
			return recs
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s was never journaled", k)
	return nil
}

func TestCancelledTurnStopsModelAndIsJournaled(t *testing.T) {
	run := newRun(t)
	m := &blockingModel{started: make(chan struct{}), observed: make(chan struct{})}
	c := startEmbedded(t, run.j, func(string, route.Identity) (route.Model, error) { return m, nil })
	id := createSession(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.RunTurn(ctx, &sessionspb.RunTurnRequest{SessionId: id, Instructions: "i", Input: "x"})
		done <- err
	}()
	select {
	case <-m.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the model was never called")
	}
	// Cancel once the request is on disk, so the test pins down what a
	// cancellation during the model call leaves behind.
	waitForKind(t, run.j, id, journal.KindModelRequest)
	cancel()
	select {
	case <-m.observed:
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight model call never saw the cancellation")
	}
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Errorf("run turn error = %v, want Canceled", err)
	}
	recs := waitForKind(t, run.j, id, journal.KindTurnTerminal)
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, string(r.Kind))
	}
	if got := strings.Join(kinds, ","); got != "session.placed,turn.started,model.request,turn.terminal" {
		t.Errorf("records = %s", got)
	}
	var term journal.TurnTerminal
	if err := journal.Decode(recs[len(recs)-1].Payload, &term); err != nil {
		t.Fatal(err)
	}
	if term.DurationUs <= 0 {
		t.Errorf("terminal %+v has no duration", term)
	}
	term.DurationUs = 0
	if term != (journal.TurnTerminal{Turn: 1, State: journal.StateCancelled, Error: harness.ErrTextCancelled}) {
		t.Errorf("terminal = %+v", term)
	}
}

func TestEmbeddedCloseIsIdempotent(t *testing.T) {
	run := newRun(t)
	e, err := Start(context.Background(), Options{Journal: run.j, Resolve: fakeResolver})
	if err != nil {
		t.Fatal(err)
	}
	c := e.Client()
	e.Close()
	e.Close()
	if _, err := c.CreateSession(context.Background(), &sessionspb.CreateSessionRequest{Purpose: "agent", Model: fakeIdentity}); err == nil {
		t.Error("a closed service still placed a session")
	}
}

func TestStartRefusesMissingDependencies(t *testing.T) {
	run := newRun(t)
	for _, tt := range []struct {
		name string
		opts Options
		want string
	}{
		{"no journal", Options{Resolve: fakeResolver}, "no journal"},
		{"no resolver", Options{Journal: run.j}, "no model resolver"},
	} {
		if _, err := Start(context.Background(), tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestCloseWaitsForCancelledTerminal(t *testing.T) {
	run := newRun(t)
	m := &blockingModel{started: make(chan struct{}), observed: make(chan struct{})}
	e, err := Start(context.Background(), Options{Journal: run.j, Resolve: func(string, route.Identity) (route.Model, error) { return m, nil }})
	if err != nil {
		t.Fatal(err)
	}
	id := createSession(t, e.Client())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.Client().RunTurn(context.Background(), &sessionspb.RunTurnRequest{SessionId: id, Instructions: "i", Input: "x"})
	}()
	<-m.started
	waitForKind(t, run.j, id, journal.KindModelRequest)
	e.Close()
	// No polling: once Close has returned the terminal must be committed.
	recs, err := run.j.Records(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	var term journal.TurnTerminal
	if last.Kind != journal.KindTurnTerminal || journal.Decode(last.Payload, &term) != nil || term.State != journal.StateCancelled {
		t.Errorf("after Close the last record is %s %s", last.Kind, last.Payload)
	}
	select {
	case <-m.observed:
	default:
		t.Error("Close returned while the model call was still in flight")
	}
	<-done
}
