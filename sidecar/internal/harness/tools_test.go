package harness

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// scriptedToolModel answers send k with replies[k-1] and counts its calls.
type scriptedToolModel struct {
	replies []route.Completion
	calls   atomic.Int32
	seen    []route.Request
}

func (m *scriptedToolModel) Identity() route.Identity {
	return route.Identity{Route: "test", Model: "m1"}
}

func (m *scriptedToolModel) Complete(_ context.Context, req route.Request) (route.Completion, error) {
	n := int(m.calls.Add(1))
	m.seen = append(m.seen, req)
	if n > len(m.replies) {
		return route.Completion{}, fmt.Errorf("unexpected send %d", n)
	}
	c := m.replies[n-1]
	c.Model = req.Model
	return c, nil
}

func toolRequest(tools ...*sessionspb.ToolSpec) *sessionspb.HarnessTurnRequest {
	req := chatRequest(PurposeAgent, "hi")
	req.Harness = LocalTools
	req.Tools = tools
	return req
}

func stubTool(name string) *sessionspb.ToolSpec {
	return &sessionspb.ToolSpec{Name: name, State: localtools.Enabled, Source: localtools.SourceUnavailable}
}

func calls(n int, name string) []route.ToolCall {
	out := make([]route.ToolCall, n)
	for i := range out {
		out[i] = route.ToolCall{ID: fmt.Sprintf("c%d", i+1), Name: name, Arguments: "{}"}
	}
	return out
}

// runScripted runs one tool turn on a recording stream with a counting
// dispatcher and returns the events and the number of dispatches.
func runScripted(t *testing.T, ctx context.Context, m *scriptedToolModel, req *sessionspb.HarnessTurnRequest,
	hook func(index int)) ([]*sessionspb.HarnessEvent, int32) {
	t.Helper()
	var dispatched atomic.Int32
	d := func(ctx context.Context, index int, call route.ToolCall, tool localtools.Tool) (localtools.Answer, error) {
		dispatched.Add(1)
		if hook != nil {
			hook(index)
		}
		return liveDispatch(nil, nil)(ctx, index, call, tool)
	}
	s := &recordingStream{ctx: ctx}
	_ = runTools(ctx, s, m, 1, req, d, m.calls.Load, nil)
	return s.events, dispatched.Load()
}

func terminalOf(t *testing.T, events []*sessionspb.HarnessEvent) *sessionspb.TerminalEvent {
	t.Helper()
	if len(events) == 0 || events[len(events)-1].GetTerminal() == nil {
		t.Fatalf("no terminal event among %d events", len(events))
	}
	return events[len(events)-1].GetTerminal()
}

func countKind(events []*sessionspb.HarnessEvent, pred func(*sessionspb.HarnessEvent) bool) int {
	n := 0
	for _, e := range events {
		if pred(e) {
			n++
		}
	}
	return n
}

// TestWholeBatchIsRefusedBeforeTheFirstCall: a sixth call, a repeated call
// ID, arguments of 8 KiB + 1, an undeclared name or non-object arguments
// anywhere in the batch refuse the whole batch: no call is answered, no
// tool.call is emitted, and there is no second send.
func TestWholeBatchIsRefusedBeforeTheFirstCall(t *testing.T) {
	big := `{"q":"` + strings.Repeat("x", localtools.MaxArgumentBytes-7) + `"}`
	if len(big) != localtools.MaxArgumentBytes+1 {
		t.Fatalf("big arguments are %d bytes", len(big))
	}
	dup := calls(2, "ping")
	dup[1].ID = dup[0].ID
	late := calls(3, "ping")
	late[2].Arguments = big
	undeclared := calls(2, "ping")
	undeclared[1].Name = "other"
	notObject := calls(2, "ping")
	notObject[1].Arguments = "[1]"
	tests := []struct {
		name  string
		batch []route.ToolCall
		want  string
	}{
		{"six calls", calls(6, "ping"), "6 tool calls"},
		{"duplicate call IDs", dup, "repeats a call ID"},
		{"arguments of 8 KiB + 1 in a later call", late, "8193 bytes of arguments"},
		{"an undeclared name", undeclared, "not offered"},
		{"arguments that are not an object", notObject, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &scriptedToolModel{replies: []route.Completion{{FinishReason: "tool_calls", ToolCalls: tc.batch}, {Text: "never"}}}
			events, dispatched := runScripted(t, context.Background(), m, toolRequest(stubTool("ping")), nil)
			term := terminalOf(t, events)
			if term.GetState() != sessionspb.TurnState_TURN_STATE_FAILED || !strings.Contains(term.GetError(), ErrTextToolBatch) || !strings.Contains(term.GetError(), tc.want) {
				t.Errorf("terminal = %v %q, want failed with %q", term.GetState(), term.GetError(), tc.want)
			}
			if dispatched != 0 || m.calls.Load() != 1 {
				t.Errorf("dispatched %d calls and made %d sends; want 0 and 1", dispatched, m.calls.Load())
			}
			if n := countKind(events, func(e *sessionspb.HarnessEvent) bool { return e.GetToolCall() != nil }); n != 0 {
				t.Errorf("%d tool.call events before a refused batch", n)
			}
		})
	}
}

func TestFiveCallsRunSeriallyAndSendTwice(t *testing.T) {
	m := &scriptedToolModel{replies: []route.Completion{{FinishReason: "tool_calls", ToolCalls: calls(5, "ping")}, {Text: "done", FinishReason: "stop"}}}
	var order []int
	events, dispatched := runScripted(t, context.Background(), m, toolRequest(stubTool("ping")), func(i int) { order = append(order, i) })
	term := terminalOf(t, events)
	if term.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED || term.GetAnswer() != "done" || term.GetLiveCalls() != 2 {
		t.Fatalf("terminal = %+v", term)
	}
	if dispatched != 5 || fmt.Sprint(order) != "[1 2 3 4 5]" {
		t.Errorf("dispatch order %v", order)
	}
	second := m.seen[1]
	var tools int
	for _, msg := range second.Messages {
		if msg.Role == "tool" {
			tools++
			if msg.Content != localtools.UnavailableText {
				t.Errorf("stub answered %q", msg.Content)
			}
		}
	}
	if tools != 5 || len(second.Tools) != 1 {
		t.Errorf("second send carries %d tool results and offers %d tools", tools, len(second.Tools))
	}
}

func TestSecondToolRoundIsRefused(t *testing.T) {
	m := &scriptedToolModel{replies: []route.Completion{
		{FinishReason: "tool_calls", ToolCalls: calls(1, "ping")},
		{FinishReason: "tool_calls", ToolCalls: calls(1, "ping")},
	}}
	events, dispatched := runScripted(t, context.Background(), m, toolRequest(stubTool("ping")), nil)
	term := terminalOf(t, events)
	if term.GetState() != sessionspb.TurnState_TURN_STATE_FAILED || term.GetError() != ErrTextToolRound {
		t.Errorf("terminal = %v %q", term.GetState(), term.GetError())
	}
	if dispatched != 1 || m.calls.Load() != 2 {
		t.Errorf("dispatched %d, sends %d; want 1 and 2 (no third send)", dispatched, m.calls.Load())
	}
}

func TestCancellationBetweenTwoCallsStopsLaterCalls(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &scriptedToolModel{replies: []route.Completion{{FinishReason: "tool_calls", ToolCalls: calls(2, "ping")}, {Text: "never"}}}
	events, dispatched := runScripted(t, ctx, m, toolRequest(stubTool("ping")), func(i int) {
		if i == 1 {
			cancel()
		}
	})
	term := terminalOf(t, events)
	if term.GetState() != sessionspb.TurnState_TURN_STATE_CANCELLED {
		t.Errorf("terminal = %v %q, want cancelled", term.GetState(), term.GetError())
	}
	if dispatched != 1 || m.calls.Load() != 1 {
		t.Errorf("dispatched %d, sends %d; want 1 and 1", dispatched, m.calls.Load())
	}
}

func TestOversizedResultIsRefused(t *testing.T) {
	tool := &sessionspb.ToolSpec{Name: "ping", State: localtools.Enabled, Source: localtools.SourceRecorded,
		Recorded: []*sessionspb.SavedCall{{Arguments: "{}", Result: `"` + strings.Repeat("r", localtools.MaxResultBytes-1) + `"`}}}
	m := &scriptedToolModel{replies: []route.Completion{{FinishReason: "tool_calls", ToolCalls: calls(1, "ping")}, {Text: "never"}}}
	events, _ := runScripted(t, context.Background(), m, toolRequest(tool), nil)
	term := terminalOf(t, events)
	if term.GetState() != sessionspb.TurnState_TURN_STATE_FAILED || !strings.Contains(term.GetError(), ErrTextToolResult) {
		t.Errorf("terminal = %v %q", term.GetState(), term.GetError())
	}
	if m.calls.Load() != 1 {
		t.Errorf("a refused result still led to send %d", m.calls.Load())
	}
}

// TestDisabledToolNeverExecutes: a Disabled call is answered with the fixed
// text without consulting a recording, the stub or any executor, is not a
// dispatch, and still takes a slot of the batch.
func TestDisabledToolNeverExecutes(t *testing.T) {
	tool := &sessionspb.ToolSpec{Name: "ping", State: localtools.Disabled, Source: localtools.SourceDisabled,
		Recorded: []*sessionspb.SavedCall{{Arguments: "{}", Result: `"pong"`}}}
	m := &scriptedToolModel{replies: []route.Completion{{FinishReason: "tool_calls", ToolCalls: calls(1, "ping")}, {Text: "ok"}}}
	events, _ := runScripted(t, context.Background(), m, toolRequest(tool), nil)
	if term := terminalOf(t, events); term.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
		t.Fatalf("terminal = %+v", term)
	}
	for _, msg := range m.seen[1].Messages {
		if msg.Role == "tool" && msg.Content != localtools.DisabledText {
			t.Errorf("disabled tool answered %q", msg.Content)
		}
	}
	for _, e := range events {
		if r := e.GetToolResult(); r != nil && (strings.Contains(string(r.GetResultJson()), `"dispatched":true`) || !strings.Contains(string(r.GetResultJson()), `"source":"disabled"`)) {
			t.Errorf("disabled result = %s", r.GetResultJson())
		}
	}
	// Six calls of a Disabled tool are still six slots: refused.
	m6 := &scriptedToolModel{replies: []route.Completion{{FinishReason: "tool_calls", ToolCalls: calls(6, "ping")}}}
	events, _ = runScripted(t, context.Background(), m6, toolRequest(tool), nil)
	if term := terminalOf(t, events); !strings.Contains(term.GetError(), ErrTextToolBatch) {
		t.Errorf("six disabled calls: %q", term.GetError())
	}
}

// TestLiveToolsAnswerLiveBoundCalls: a live-bound tool's call with no
// matching recording goes to the live executor once (source live, a
// dispatch); a recording that matches answers instead; a Disabled tool
// never reaches it; a failed live call fails the turn with no retry and no
// second send.
func TestLiveToolsAnswerLiveBoundCalls(t *testing.T) {
	liveTool := &sessionspb.ToolSpec{Name: "ping", State: localtools.Enabled, Source: localtools.SourceLive,
		Recorded: []*sessionspb.SavedCall{{Arguments: `{"n":1}`, Result: "saved"}}}
	// An input no error text contains ("hi" is in "this").
	liveReq := toolRequest(liveTool)
	liveReq.Input = "Ada"
	var got []string
	live := func(_ context.Context, call route.ToolCall, tool localtools.Tool) (string, error) {
		got = append(got, tool.Name+" "+call.Arguments)
		return "live answer", nil
	}
	batch := []route.ToolCall{{ID: "a", Name: "ping", Arguments: `{"n":2}`}, {ID: "b", Name: "ping", Arguments: `{"n":1}`}}
	m := &scriptedToolModel{replies: []route.Completion{{FinishReason: "tool_calls", ToolCalls: batch}, {Text: "done"}}}
	s := &recordingStream{ctx: context.Background()}
	_ = runTools(context.Background(), s, m, 1, liveReq, liveDispatch(live, nil), m.calls.Load, nil)
	if term := terminalOf(t, s.events); term.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED || term.GetAnswer() != "done" {
		t.Fatalf("terminal = %+v", term)
	}
	if fmt.Sprint(got) != `[ping {"n":2}]` {
		t.Fatalf("live executor saw %v, want only the unrecorded call", got)
	}
	var results []string
	for _, e := range s.events {
		if r := e.GetToolResult(); r != nil {
			results = append(results, string(r.GetResultJson()))
		}
	}
	if len(results) != 2 || !strings.Contains(results[0], `"source":"live"`) || !strings.Contains(results[0], `"dispatched":true`) ||
		!strings.Contains(results[0], `"result":"live answer"`) || !strings.Contains(results[1], `"source":"recorded"`) {
		t.Fatalf("tool results = %v", results)
	}

	// A failed live call: the turn fails with the executor's class text,
	// the call is not retried and the model is not sent to again.
	calls := 0
	failing := func(context.Context, route.ToolCall, localtools.Tool) (string, error) {
		calls++
		return "", route.NewEditorError(route.EditorToolFailed, nil)
	}
	m2 := &scriptedToolModel{replies: []route.Completion{{FinishReason: "tool_calls", ToolCalls: batch[:1]}, {Text: "never"}}}
	s2 := &recordingStream{ctx: context.Background()}
	_ = runTools(context.Background(), s2, m2, 1, liveReq, liveDispatch(failing, nil), m2.calls.Load, nil)
	term := terminalOf(t, s2.events)
	if term.GetState() != sessionspb.TurnState_TURN_STATE_FAILED || !strings.Contains(term.GetError(), ErrTextToolFailed) || !strings.Contains(term.GetError(), "the tool failed in VS Code") {
		t.Fatalf("terminal = %v %q", term.GetState(), term.GetError())
	}
	if calls != 1 || m2.calls.Load() != 1 {
		t.Fatalf("live calls %d, sends %d; want 1 and 1", calls, m2.calls.Load())
	}

	// No executor bound: a live source is a broken invariant, a failed call.
	m3 := &scriptedToolModel{replies: []route.Completion{{FinishReason: "tool_calls", ToolCalls: batch[:1]}, {Text: "never"}}}
	s3 := &recordingStream{ctx: context.Background()}
	_ = runTools(context.Background(), s3, m3, 1, liveReq, liveDispatch(nil, nil), m3.calls.Load, nil)
	if term := terminalOf(t, s3.events); term.GetState() != sessionspb.TurnState_TURN_STATE_FAILED || !strings.Contains(term.GetError(), "no live tool executor") {
		t.Fatalf("terminal = %v %q", term.GetState(), term.GetError())
	}
}
