package sessions

import (
	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// trace checks, in arrival order, the records a turn writes between
// turn.started and turn.terminal, for every harness. A chat turn is one
// model request and its completion. A tool turn is send 1's request and
// completion, then, while a completion requested a batch, one tool.call and
// tool.result per call in batch order and the next send's request and
// completion: at most two sends on kmx-local-tools-v1, eight (and 24 calls)
// on kmx-workspace-tools-v1, whose turn ends with one workspace.outcome
// after its final completion. The same checks run live (before each record
// is journaled) and in verification (over what was journaled).
type trace struct {
	tools     bool
	workspace bool
	turn      int
	model     string
	maxSends  int
	maxCalls  int

	requests    []journal.ModelRequest
	completions []journal.ModelCompletion
	calls       []journal.ToolCall
	results     []journal.ToolResult
	// batched is the calls the completions so far requested, in order.
	batched []journal.ToolCallRequest
	// outcome is the workspace.outcome payload, once journaled.
	outcome []byte
}

func newTrace(harnessName string, turn int, model string) *trace {
	t := &trace{tools: harness.IsTools(harnessName), workspace: harnessName == harness.WorkspaceTools, turn: turn, model: model,
		maxSends: 2, maxCalls: localtools.MaxCalls}
	if t.workspace {
		t.maxSends, t.maxCalls = harness.MaxWorkspaceSends, harness.MaxWorkspaceCalls
	}
	return t
}

// lastBatch is the latest completion's tool calls.
func (t *trace) lastBatch() []journal.ToolCallRequest {
	if len(t.completions) == 0 {
		return nil
	}
	return t.completions[len(t.completions)-1].ToolCalls
}

// accept checks the next record; false means the harness broke the turn
// protocol (or, in verification, the journal does not hold a turn).
func (t *trace) accept(kind journal.Kind, payload []byte) bool {
	if t.outcome != nil {
		return false // the outcome is the turn's last record
	}
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
		} else if v.Send != n+1 || n >= t.maxSends || (n > 0 && (len(t.lastBatch()) == 0 || len(t.results) != len(t.batched))) {
			return false
		}
		t.requests = append(t.requests, v)
	case journal.KindModelCompletion:
		var v journal.ModelCompletion
		n := len(t.completions)
		if journal.Decode(payload, &v) != nil || v.Turn != t.turn || n+1 != len(t.requests) || v.Send != t.requests[n].Send {
			return false
		}
		// A tool turn's batch that breaks its bounds (on the last send, a
		// sixth call, the turn's 25th) is journaled as it came, and the
		// turn fails; tool.call refuses any of its calls.
		if !t.tools && len(v.ToolCalls) > 0 {
			return false
		}
		t.completions = append(t.completions, v)
		t.batched = append(t.batched, v.ToolCalls...)
	case journal.KindToolCall:
		var v journal.ToolCall
		i := len(t.calls)
		if !t.tools || journal.Decode(payload, &v) != nil || v.Turn != t.turn || len(t.requests) != len(t.completions) || len(t.completions) == 0 ||
			len(t.completions) >= t.maxSends || i >= t.maxCalls || len(t.lastBatch()) > localtools.MaxCalls ||
			i != len(t.results) || i >= len(t.batched) || v.Index != i+1 || v.ID != t.batched[i].ID || v.Name != t.batched[i].Name || v.Arguments != t.batched[i].Arguments {
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
	case journal.KindWorkspaceOutcome:
		var v journal.WorkspaceOutcome
		if !t.workspace || t.answered() == nil || journal.Decode(payload, &v) != nil || v.Turn != t.turn || len(v.Outcome) == 0 {
			return false
		}
		t.outcome = payload
	default:
		return false
	}
	return true
}

// answered returns the completion a tool turn's final response is: every
// send answered, every requested call answered and the last completion
// text; nil otherwise.
func (t *trace) answered() *journal.ModelCompletion {
	n := len(t.completions)
	if n == 0 || n != len(t.requests) || len(t.results) != len(t.batched) || len(t.lastBatch()) > 0 {
		return nil
	}
	return &t.completions[n-1]
}

// final returns the completion whose text a completed turn answers with,
// or nil when the trace does not end a complete turn: every send answered,
// and on a tool turn every call answered and the last response text (and,
// on kmx-workspace-tools-v1, the workspace outcome journaled after it).
func (t *trace) final() *journal.ModelCompletion {
	n := len(t.completions)
	if n == 0 || n != len(t.requests) {
		return nil
	}
	if !t.tools {
		return &t.completions[n-1]
	}
	last := t.answered()
	if last == nil || (t.workspace && t.outcome == nil) {
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
