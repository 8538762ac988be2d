package sessions

import (
	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// trace checks, in arrival order, the records a turn writes between
// turn.started and turn.terminal, for either harness. A chat turn is one
// model request and its completion. A kmx-local-tools-v1 turn is send 1's
// request and completion; when that completion requested a batch, one
// tool.call and tool.result per call in batch order, then send 2's request
// and completion. The same checks run live (before each record is
// journaled) and in verification (over what was journaled).
type trace struct {
	tools bool
	turn  int
	model string

	requests    []journal.ModelRequest
	completions []journal.ModelCompletion
	calls       []journal.ToolCall
	results     []journal.ToolResult
}

func newTrace(harnessName string, turn int, model string) *trace {
	return &trace{tools: harnessName == harness.LocalTools, turn: turn, model: model}
}

// batch is the first completion's tool calls.
func (t *trace) batch() []journal.ToolCallRequest {
	if len(t.completions) == 0 {
		return nil
	}
	return t.completions[0].ToolCalls
}

// accept checks the next record; false means the harness broke the turn
// protocol (or, in verification, the journal does not hold a turn).
func (t *trace) accept(kind journal.Kind, payload []byte) bool {
	switch kind {
	case journal.KindModelRequest:
		var v journal.ModelRequest
		n := len(t.requests)
		if journal.Decode(payload, &v) != nil || v.Turn != t.turn || v.Model != t.model || n != len(t.completions) {
			return false
		}
		if !t.tools {
			if n != 0 || v.Send != 0 {
				return false
			}
		} else if v.Send != n+1 || n >= 2 || (n == 1 && (len(t.batch()) == 0 || len(t.results) != len(t.batch()))) {
			return false
		}
		t.requests = append(t.requests, v)
	case journal.KindModelCompletion:
		var v journal.ModelCompletion
		n := len(t.completions)
		if journal.Decode(payload, &v) != nil || v.Turn != t.turn || n+1 != len(t.requests) || v.Send != t.requests[n].Send {
			return false
		}
		if !t.tools && len(v.ToolCalls) > 0 {
			return false
		}
		t.completions = append(t.completions, v)
	case journal.KindToolCall:
		var v journal.ToolCall
		b := t.batch()
		i := len(t.calls)
		if !t.tools || journal.Decode(payload, &v) != nil || v.Turn != t.turn || len(t.requests) != 1 || len(t.completions) != 1 ||
			i != len(t.results) || i >= len(b) || v.Index != i+1 || v.ID != b[i].ID || v.Name != b[i].Name || v.Arguments != b[i].Arguments {
			return false
		}
		t.calls = append(t.calls, v)
	case journal.KindToolResult:
		var v journal.ToolResult
		i := len(t.results)
		if !t.tools || journal.Decode(payload, &v) != nil || v.Turn != t.turn || i+1 != len(t.calls) ||
			v.Index != t.calls[i].Index || v.ID != t.calls[i].ID || v.Name != t.calls[i].Name {
			return false
		}
		t.results = append(t.results, v)
	default:
		return false
	}
	return true
}

// final returns the completion whose text a completed turn answers with,
// or nil when the trace does not end a complete turn: every send answered,
// and on a tool turn with a batch, every call answered and send 2 made,
// whose response is text.
func (t *trace) final() *journal.ModelCompletion {
	n := len(t.completions)
	if n == 0 || n != len(t.requests) {
		return nil
	}
	last := &t.completions[n-1]
	if !t.tools {
		return last
	}
	if len(t.batch()) == 0 {
		if n != 1 {
			return nil
		}
		return last
	}
	if n != 2 || len(t.results) != len(t.batch()) || len(last.ToolCalls) > 0 {
		return nil
	}
	return last
}

// uses is the turn's answered calls, for reports and tool assertions.
func (t *trace) uses() []*sessionspb.ToolUse {
	out := make([]*sessionspb.ToolUse, 0, len(t.results))
	for i, r := range t.results {
		// Results answer the calls one for one, in batch order (accept
		// holds them together), so call i carries result i's arguments.
		out = append(out, &sessionspb.ToolUse{Name: r.Name, Source: r.Source, Dispatched: r.Dispatched, Arguments: t.calls[i].Arguments})
	}
	return out
}

// offeredFromProto is the journal form of a session's tool set.
// It mirrors harness.ToolsFromProto on purpose: the journal keeps its own
// record type (journal.OfferedTool), so the persisted, hash-chained format
// does not change when the runtime localtools.Tool does.
func offeredFromProto(specs []*sessionspb.ToolSpec) []journal.OfferedTool {
	if len(specs) == 0 {
		return nil
	}
	out := make([]journal.OfferedTool, 0, len(specs))
	for _, s := range specs {
		o := journal.OfferedTool{Name: s.GetName(), State: s.GetState(), Source: s.GetSource(), Pending: s.GetPending(),
			Function: s.GetFunction(), Reference: s.GetReference(), Description: s.GetDescription(), Parameters: s.GetParameters(), Table: s.GetTable()}
		for _, c := range s.GetRecorded() {
			o.Recorded = append(o.Recorded, journal.RecordedCall{Arguments: c.GetArguments(), Result: c.GetResult()})
		}
		out = append(out, o)
	}
	return out
}

// offeredToProto rebuilds the tool set from its journal form, for replay.
func offeredToProto(tools []journal.OfferedTool) []*sessionspb.ToolSpec {
	out := make([]*sessionspb.ToolSpec, 0, len(tools))
	for _, o := range tools {
		s := &sessionspb.ToolSpec{Name: o.Name, State: o.State, Source: o.Source, Pending: o.Pending,
			Function: o.Function, Reference: o.Reference, Description: o.Description, Parameters: o.Parameters, Table: o.Table}
		for _, c := range o.Recorded {
			s.Recorded = append(s.Recorded, &sessionspb.SavedCall{Arguments: c.Arguments, Result: c.Result})
		}
		out = append(out, s)
	}
	return out
}
