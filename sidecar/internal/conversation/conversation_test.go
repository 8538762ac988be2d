package conversation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/journal/journaltest"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessions"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

const turnInstructions = "You are a test agent.\nReply with the turn number\n"

func newFake() *route.Counted { return &route.Counted{Model: route.NewFake()} }

// scriptedModel answers with a fixed text and reported model name.
type scriptedModel struct {
	id      route.Identity
	replyAs string
	calls   atomic.Int32
}

func (m *scriptedModel) Identity() route.Identity { return m.id }
func (m *scriptedModel) Complete(ctx context.Context, req route.Request) (route.Completion, error) {
	m.calls.Add(1)
	return route.Completion{Model: m.replyAs, Text: "scripted answer", FinishReason: "stop"}, nil
}

type fixture struct {
	t     *testing.T
	state string
	file  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := testutil.PrivateDir(t)
	file := filepath.Join(t.TempDir(), "talker.agent.md")
	if err := os.WriteFile(file, []byte("---\nname: Talker\nmodel: fake\n---\n"+turnInstructions), 0o600); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, state: root, file: file}
}

func (f *fixture) open(id string) *Conversation {
	f.t.Helper()
	c, err := Open(context.Background(), Options{StateDir: f.state, File: f.file, ID: id, Version: "test"})
	if err != nil {
		f.t.Fatalf("Open: %v", err)
	}
	return c
}

func (f *fixture) openErr(id string) error {
	f.t.Helper()
	c, err := Open(context.Background(), Options{StateDir: f.state, File: f.file, ID: id, Version: "test"})
	if err == nil {
		_ = c.Close()
		f.t.Fatalf("Open succeeded; want a refusal")
	}
	return err
}

func closeConv(t *testing.T, c *Conversation) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func send(t *testing.T, c *Conversation, m route.Model, input string) ChatTurn {
	t.Helper()
	turn, err := c.Send(context.Background(), SendRequest{Instructions: turnInstructions, Input: input, Model: m})
	if err != nil {
		t.Fatalf("Send(%q): %v", input, err)
	}
	return turn
}

func wantCode(t *testing.T, err error, code string) *Refusal {
	t.Helper()
	r, ok := AsRefusal(err)
	if !ok {
		t.Fatalf("error = %v; want a refusal %q", err, code)
	}
	if r.Code != code {
		t.Fatalf("refusal code = %q (%s); want %q", r.Code, r.Msg, code)
	}
	if r.Next == "" {
		t.Fatalf("refusal %q has no next step", r.Msg)
	}
	return r
}

// recordCount is the number of records in the conversation's journal.
func recordCount(t *testing.T, c *Conversation) int {
	t.Helper()
	recs, err := c.j.Records(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// TestConversationRemembersAcrossReopen: each turn is sent with the history
// of every earlier turn; a reopened conversation rebuilds it by replay with
// zero model calls, and nothing is re-sent.
func TestConversationRemembersAcrossReopen(t *testing.T) {
	f := newFixture(t)
	fake := newFake()
	c := f.open("")
	if got := send(t, c, fake, "hello").Answer; got != "Turn 1: hello" {
		t.Fatalf("turn 1 answer = %q", got)
	}
	if got := send(t, c, fake, "again").Answer; got != "Turn 2: again" {
		t.Fatalf("turn 2 answer = %q", got)
	}
	if n := recordCount(t, c); n != 10 {
		t.Fatalf("journal holds %d records after two turns; want 2x5", n)
	}
	closeConv(t, c)

	before := fake.Calls()
	c = f.open(DefaultID)
	defer closeConv(t, c)
	if fake.Calls() != before || c.ReplayLiveCalls() != 0 {
		t.Fatalf("reopening made %d model calls, replay counted %d; want 0", fake.Calls()-before, c.ReplayLiveCalls())
	}
	turns := c.Turns()
	if len(turns) != 2 || turns[0].Name != "turn:1" || turns[1].Name != "turn:2" ||
		turns[1].Answer != "Turn 2: again" || turns[1].Input != "again" || turns[1].State != StateAnswered {
		t.Fatalf("history after reopen = %+v", turns)
	}
	if got := send(t, c, fake, "third").Answer; got != "Turn 3: third" {
		t.Fatalf("turn 3 answer = %q; the history was not sent", got)
	}
	if got := fake.Calls() - before; got != 1 {
		t.Fatalf("one new turn made %d model calls; want 1", got)
	}
	if id := c.Identity(); id == nil || *id != (route.Identity{Route: "fake", Model: "fake"}) {
		t.Fatalf("identity = %v", id)
	}
}

// TestConversationsAreSeparateByIDAndFile: another ID, or another file, is
// another conversation.
func TestConversationsAreSeparateByIDAndFile(t *testing.T) {
	f := newFixture(t)
	fake := newFake()
	c := f.open("")
	send(t, c, fake, "one")
	closeConv(t, c)
	other := f.open("other")
	if got := send(t, other, fake, "x").Answer; got != "Turn 1: x" {
		t.Fatalf("other conversation answer = %q", got)
	}
	closeConv(t, other)
	if Key("/a/b.agent.md", "default") == Key("/a/c.agent.md", "default") || Key("/a/b.agent.md", "x") == Key("/a/b.agent.md", "y") {
		t.Fatal("keys collide")
	}
	// A symlink to the file is the same conversation.
	link := filepath.Join(t.TempDir(), "link.agent.md")
	if err := os.Symlink(f.file, link); err != nil {
		t.Fatal(err)
	}
	c, err := Open(context.Background(), Options{StateDir: f.state, File: link, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeConv(t, c)
	if n := len(c.Turns()); n != 1 {
		t.Fatalf("through a symlink the conversation has %d turns; want 1", n)
	}
}

// TestInvariant1NoSecondTurnWhileOneRuns: the conversation's lock refuses a
// second holder (the same as another process: the lock is per open file),
// and one Conversation refuses a second Send while the first runs.
func TestInvariant1NoSecondTurnWhileOneRuns(t *testing.T) {
	f := newFixture(t)
	c := f.open("")
	defer closeConv(t, c)
	wantCode(t, f.openErr(""), CodeBusy)
	if _, err := Clear(Options{StateDir: f.state, File: f.file}); err == nil {
		t.Fatal("Clear removed a conversation that is open")
	} else {
		wantCode(t, err, CodeBusy)
	}

	slow := newBlockingModel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Send(context.Background(), SendRequest{Instructions: turnInstructions, Input: "first", Model: slow})
		done <- err
	}()
	<-slow.entered
	fake := newFake()
	_, err := c.Send(context.Background(), SendRequest{Instructions: turnInstructions, Input: "second", Model: fake})
	wantCode(t, err, CodeBusy)
	if fake.Calls() != 0 {
		t.Fatal("the refused second turn reached a model")
	}
	close(slow.release)
	if err := <-done; err != nil {
		t.Fatalf("first turn: %v", err)
	}
}

// blockingModel answers once released; when its context ends it tears down
// (blocking until release) before returning.
type blockingModel struct {
	entered  chan struct{}
	tearing  chan struct{}
	release  chan struct{}
	tornDown atomic.Bool
}

func newBlockingModel() *blockingModel {
	return &blockingModel{entered: make(chan struct{}), tearing: make(chan struct{}), release: make(chan struct{})}
}

func (m *blockingModel) Identity() route.Identity {
	return route.Identity{Route: "test", Model: "slow"}
}

func (m *blockingModel) Complete(ctx context.Context, req route.Request) (route.Completion, error) {
	close(m.entered)
	select {
	case <-m.release:
		return route.Completion{Model: "slow", Text: "slow answer", FinishReason: "stop"}, nil
	case <-ctx.Done():
	}
	close(m.tearing)
	<-m.release // the provider's teardown, held by the test
	m.tornDown.Store(true)
	return route.Completion{}, ctx.Err()
}

// TestInvariant2CancelJoinsTeardown: a cancelled Send returns only after the
// provider's in-flight request has been torn down, and fresh work starts
// afterwards (no deadlock). It fails if Send merely signalled cancellation
// and left.
func TestInvariant2CancelJoinsTeardown(t *testing.T) {
	f := newFixture(t)
	c := f.open("")
	defer closeConv(t, c)
	slow := newBlockingModel()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		turn     ChatTurn
		err      error
		tornDown bool
	}
	done := make(chan result, 1)
	go func() {
		turn, err := c.Send(ctx, SendRequest{Instructions: turnInstructions, Input: "wait", Model: slow})
		done <- result{turn, err, slow.tornDown.Load()}
	}()
	<-slow.entered
	cancel()
	<-slow.tearing
	// The provider is now blocked in its teardown. A Send that does not
	// join it returns at once; give it ample time to do so.
	select {
	case r := <-done:
		t.Fatalf("Send returned (%v) while the provider's teardown was still blocked", r.err)
	case <-time.After(300 * time.Millisecond):
	}
	close(slow.release)
	r := <-done
	if !r.tornDown {
		t.Fatal("Send returned before the provider's teardown finished")
	}
	if !errors.Is(r.err, context.Canceled) || r.turn.State != StateCancelled {
		t.Fatalf("cancelled Send = %+v, %v; want a cancelled turn and context.Canceled", r.turn, r.err)
	}

	// Fresh work: the conversation continues on the same model.
	slow2 := newBlockingModel()
	close(slow2.release)
	turn, err := c.Send(context.Background(), SendRequest{Instructions: turnInstructions, Input: "again", Model: slow2})
	if err != nil || turn.State != StateAnswered || turn.N != 2 {
		t.Fatalf("Send after cancel = %+v, %v; want turn 2 answered", turn, err)
	}
}

// appendUnfinished writes turn n's placement and start, as a process killed
// mid-turn leaves them (no model request, completion or terminal).
func appendUnfinished(t *testing.T, c *Conversation, n int, id route.Identity, input string) {
	t.Helper()
	ctx := context.Background()
	sid := "s00000001-dead" + string(rune('a'+n)) + "eef"
	placed, _ := journal.Encode(journal.SessionPlaced{SessionID: sid, Harness: "chat", Purpose: "agent", ExampleID: "turn:" + string(rune('0'+n)),
		Model: journal.ModelIdentity{Route: id.Route, Model: id.Model}})
	started, _ := journal.Encode(journal.TurnStarted{Turn: 1, Instructions: turnInstructions, Input: input, Model: journal.ModelIdentity{Route: id.Route, Model: id.Model}})
	for _, r := range []journal.Record{
		{SessionID: sid, Turn: 0, Kind: journal.KindSessionPlaced, Version: journal.SchemaVersion, Payload: placed},
		{SessionID: sid, Turn: 1, Kind: journal.KindTurnStarted, Version: journal.SchemaVersion, Payload: started},
	} {
		if _, err := c.j.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInvariant3UnfinishedTurnRefusesBeforeAnythingOpens: a last turn with
// no recorded outcome refuses new turns before anything is created or sent,
// never appends on the refusal, and an explicit discard (recorded) lets the
// conversation continue without re-sending it.
func TestInvariant3UnfinishedTurnRefusesBeforeAnythingOpens(t *testing.T) {
	f := newFixture(t)
	fake := newFake()
	c := f.open("")
	send(t, c, fake, "first")
	appendUnfinished(t, c, 2, fake.Identity(), "lost")
	// Simulate the kill: drop the lock without recording a head.
	if err := c.j.Close(); err != nil {
		t.Fatal(err)
	}

	c = f.open("")
	u := c.Unfinished()
	if u == nil || u.N != 2 || u.Input != "lost" {
		t.Fatalf("Unfinished = %+v; want turn 2", u)
	}
	records := recordCount(t, c)
	calls := fake.Calls()
	for i := 0; i < 2; i++ {
		_, err := c.Send(context.Background(), SendRequest{Instructions: turnInstructions, Input: "next", Model: fake})
		r := wantCode(t, err, CodeUnfinished)
		if r.Turn != 2 || !strings.Contains(r.Msg, "turn 2 has no recorded outcome") || !strings.Contains(r.Next, "discard") {
			t.Fatalf("refusal = %+v", r)
		}
	}
	if got := recordCount(t, c); got != records {
		t.Fatalf("the refusals appended %d records", got-records)
	}
	if fake.Calls() != calls {
		t.Fatal("a refused turn reached the model")
	}

	d, err := c.DiscardUnfinished(context.Background())
	if err != nil || d.State != StateDiscarded || d.N != 2 {
		t.Fatalf("DiscardUnfinished = %+v, %v", d, err)
	}
	if got := recordCount(t, c); got != records+1 {
		t.Fatalf("the discard appended %d records; want 1", got-records)
	}
	if _, err := c.DiscardUnfinished(context.Background()); err == nil {
		t.Fatal("a second discard succeeded")
	}
	turn := send(t, c, fake, "next")
	// The history holds turn 1 only: the discarded input is never re-sent.
	if turn.N != 3 || turn.Answer != "Turn 2: next" {
		t.Fatalf("turn after discard = %+v", turn)
	}
	closeConv(t, c)
	c2 := f.open("")
	defer closeConv(t, c2)
	if ts := c2.Turns(); len(ts) != 3 || ts[1].State != StateDiscarded || ts[2].State != StateAnswered {
		t.Fatalf("history after reopen = %+v", ts)
	}
}

// TestInvariant4IdentityRefusedBeforeTheTurn: a conversation never continues
// on another model or route than its history records.
func TestInvariant4IdentityRefusedBeforeTheTurn(t *testing.T) {
	f := newFixture(t)
	c := f.open("")
	defer closeConv(t, c)
	send(t, c, newFake(), "first")
	records := recordCount(t, c)
	for _, id := range []route.Identity{{Route: "compatible", Model: "fake"}, {Route: "fake", Model: "other"}} {
		other := &scriptedModel{id: id, replyAs: id.Model}
		_, err := c.Send(context.Background(), SendRequest{Instructions: turnInstructions, Input: "x", Model: other})
		wantCode(t, err, CodeIdentity)
		if other.calls.Load() != 0 {
			t.Fatalf("the refused turn on %v reached the model", id)
		}
	}
	if got := recordCount(t, c); got != records {
		t.Fatalf("identity refusals appended %d records", got-records)
	}
}

// TestInvariant4IdentityRefusedAfterTheReply: a reply naming another model
// is refused after the turn, recorded as refused, and kept out of the
// history, also after reopening.
func TestInvariant4IdentityRefusedAfterTheReply(t *testing.T) {
	f := newFixture(t)
	c := f.open("")
	m := &scriptedModel{id: route.Identity{Route: "test", Model: "m1"}, replyAs: "m1"}
	send(t, c, m, "first")
	m.replyAs = "m2"
	turn, err := c.Send(context.Background(), SendRequest{Instructions: turnInstructions, Input: "second", Model: m})
	r := wantCode(t, err, CodeIdentityReply)
	if r.Turn != 2 || turn.State != StateRefused || turn.Answer != "" {
		t.Fatalf("refused turn = %+v, %+v", turn, r)
	}
	closeConv(t, c)
	c = f.open("")
	defer closeConv(t, c)
	ts := c.Turns()
	if len(ts) != 2 || ts[1].State != StateRefused || ts[1].Answer != "" {
		t.Fatalf("history after reopen = %+v", ts)
	}
	if len(c.history) != 2 {
		t.Fatalf("the rebuilt history holds %d messages; want turn 1's two", len(c.history))
	}
}

// TestInvariant4HistoryWithTwoIdentitiesCannotOpen: a history whose own
// turns name two identities is refused at Open.
func TestInvariant4HistoryWithTwoIdentitiesCannotOpen(t *testing.T) {
	f := newFixture(t)
	c := f.open("")
	send(t, c, newFake(), "first")
	// Write turn 2 on another identity straight through Sessions, as only a
	// foreign writer could.
	other := &scriptedModel{id: route.Identity{Route: "test", Model: "other"}, replyAs: "other"}
	emb, err := sessions.Start(context.Background(), sessions.Options{Journal: c.j, Resolve: func(string, route.Identity) (route.Model, error) { return other, nil }})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := emb.Client().CreateSession(context.Background(), &sessionspb.CreateSessionRequest{Purpose: "agent", ExampleId: "turn:2",
		Model: &sessionspb.ModelIdentity{Route: "test", Model: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := emb.Client().RunTurn(context.Background(), &sessionspb.RunTurnRequest{SessionId: cs.GetSessionId(), Instructions: "i", Input: "x"}); err != nil {
		t.Fatal(err)
	}
	emb.Close()
	closeConv(t, c)
	r := wantCode(t, f.openErr(""), CodeIdentityHistory)
	if r.Turn != 2 {
		t.Fatalf("refusal names turn %d; want 2", r.Turn)
	}
}

// TestInvariant5TamperedHistoryRefusesToContinue: a history changed after
// it was written does not open. A consistent rewrite of turn 1's answer,
// with the hash chain recomputed, replays turn 1 but makes turn 2's request
// (which carried turn 1's answer) differ.
func TestInvariant5TamperedHistoryRefusesToContinue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rehash bool
	}{{"chain broken", false}, {"chain recomputed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			fake := newFake()
			c := f.open("")
			send(t, c, fake, "first")
			send(t, c, fake, "second")
			path := c.JournalPath()
			recs, err := c.j.Records(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			closeConv(t, c)
			for _, r := range recs {
				switch r.Kind {
				case journal.KindModelCompletion, journal.KindTurnTerminal:
					if r.Seq > 5 {
						continue
					}
					journaltest.UpdatePayload(t, path, r.Seq, []byte(strings.Replace(string(r.Payload), "Turn 1: first", "Turn 1: forged", 1)))
				}
			}
			if tc.rehash {
				journaltest.RehashChain(t, path)
			}
			calls := fake.Calls()
			r := wantCode(t, f.openErr(""), CodeDivergence)
			// Turn 1 still replays (its answer and completion agree); turn 2's
			// replayed request carries the forged answer, so the replay model
			// refuses it as a would-be live call.
			if tc.rehash && (r.Turn != 2 || !strings.Contains(r.Msg, "replay attempted a live model call")) {
				t.Fatalf("refusal = %+v; want turn 2's replay to diverge", r)
			}
			if fake.Calls() != calls {
				t.Fatal("opening a tampered history reached the model")
			}
		})
	}
}

// TestClearRemovesTheConversation: Clear removes every file of the
// conversation; the next turn starts a new history.
func TestClearRemovesTheConversation(t *testing.T) {
	f := newFixture(t)
	fake := newFake()
	c := f.open("")
	send(t, c, fake, "first")
	closeConv(t, c)
	removed, err := Clear(Options{StateDir: f.state, File: f.file})
	if err != nil || !removed {
		t.Fatalf("Clear = %v, %v", removed, err)
	}
	if names := testutil.DirNames(t, journal.ConversationsDir(f.state)); len(names) != 0 {
		t.Fatalf("left after clear: %v", names)
	}
	if removed, err := Clear(Options{StateDir: f.state, File: f.file}); err != nil || removed {
		t.Fatalf("second Clear = %v, %v; want nothing to clear", removed, err)
	}
	c = f.open("")
	defer closeConv(t, c)
	if got := send(t, c, fake, "new").Answer; got != "Turn 1: new" {
		t.Fatalf("after clear answer = %q", got)
	}
}

// TestRefusesBadInput: bad IDs and messages are refused before anything is
// created.
func TestRefusesBadInput(t *testing.T) {
	f := newFixture(t)
	wantCode(t, f.openErr("../x"), CodeInvalid)
	wantCode(t, f.openErr(strings.Repeat("a", 65)), CodeInvalid)
	if _, err := os.Stat(journal.ConversationsDir(f.state)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused Open created the conversations folder")
	}
	c := f.open("")
	defer closeConv(t, c)
	fake := newFake()
	for _, in := range []string{"", "   ", strings.Repeat("x", MaxInput+1), "key ghp_" + strings.Repeat("a", 36)} {
		_, err := c.Send(context.Background(), SendRequest{Instructions: turnInstructions, Input: in, Model: fake})
		wantCode(t, err, CodeInvalid)
	}
	if fake.Calls() != 0 || recordCount(t, c) != 0 {
		t.Fatal("a refused message reached the model or the journal")
	}
}

// TestUnfinishedTurnHintKeepsTheConversation: the refusal of a named
// conversation's unfinished turn says --conversation NAME, so the command
// run as printed discards that conversation's turn, not default's.
func TestUnfinishedTurnHintKeepsTheConversation(t *testing.T) {
	f := newFixture(t)
	fake := newFake()
	c := f.open("review")
	send(t, c, fake, "first")
	appendUnfinished(t, c, 2, fake.Identity(), "lost")
	if err := c.j.Close(); err != nil {
		t.Fatal(err)
	}
	c = f.open("review")
	_, err := c.Send(context.Background(), SendRequest{Instructions: turnInstructions, Input: "next", Model: fake})
	if r := wantCode(t, err, CodeUnfinished); !strings.Contains(r.Next, "kmx chat FILE --discard-unfinished --conversation review") {
		t.Errorf("the hint drops the conversation: %q", r.Next)
	}
	if Flag(DefaultID) != "" || Flag("") != "" {
		t.Errorf("the default conversation needs no flag")
	}
}
