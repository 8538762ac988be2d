package conversation

import (
	"context"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// recordingModel passes requests to a model and keeps each one.
type recordingModel struct {
	route.Model
	mu   sync.Mutex
	reqs []route.Request
}

func (m *recordingModel) Complete(ctx context.Context, req route.Request) (route.Completion, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return m.Model.Complete(ctx, req)
}

// TestConversationToolTurnsReplayWithZeroCalls: a tool-declaring agent's
// turns run on the tool harness with the history (earlier inputs and
// answers, never their tool exchanges), an unbound tool answers the stub,
// each turn journals its nine records, and a reopened conversation
// rebuilds the history by replaying them with zero model and tool calls.
func TestConversationToolTurnsReplayWithZeroCalls(t *testing.T) {
	f := newFixture(t)
	fake := newFake()
	m := &recordingModel{Model: fake}
	tools := []localtools.Tool{{Name: "ping", State: localtools.Enabled, Source: localtools.SourceUnavailable}}
	const instructions = "You check the service.\nCall the tool `ping`"
	c := f.open("")
	for _, input := range []string{"is it up?", "and now?"} {
		turn, err := c.Send(context.Background(), SendRequest{Instructions: instructions, Input: input, Model: m, Tools: tools})
		if err != nil || turn.State != StateAnswered || turn.Answer != localtools.UnavailableText {
			t.Fatalf("Send(%q) = %+v, %v; want the stub's text as the answer", input, turn, err)
		}
	}
	if n := recordCount(t, c); n != 18 {
		t.Fatalf("journal holds %d records after two tool turns; want 2x9", n)
	}
	if len(m.reqs) != 4 {
		t.Fatalf("two tool turns made %d sends; want 4", len(m.reqs))
	}
	// Turn 2, send 1: system, turn 1's input and answer, the new input;
	// offered ping.
	r := m.reqs[2]
	if len(r.Messages) != 4 || r.Messages[1].Content != "is it up?" || r.Messages[2].Content != localtools.UnavailableText ||
		r.Messages[2].Role != "assistant" || len(r.Messages[2].ToolCalls) != 0 || r.Messages[3].Content != "and now?" ||
		len(r.Tools) != 1 || r.Tools[0].Name != "ping" {
		t.Fatalf("turn 2 send 1 = %+v", r)
	}
	closeConv(t, c)

	before := fake.Calls()
	c = f.open(DefaultID)
	defer closeConv(t, c)
	if fake.Calls() != before || c.ReplayLiveCalls() != 0 {
		t.Fatalf("reopening made %d model calls, replay counted %d; want 0", fake.Calls()-before, c.ReplayLiveCalls())
	}
	turns := c.Turns()
	if len(turns) != 2 || turns[1].State != StateAnswered || turns[1].Answer != localtools.UnavailableText || turns[1].Input != "and now?" {
		t.Fatalf("history after reopen = %+v", turns)
	}
}
