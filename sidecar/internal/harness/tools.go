package harness

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// Fixed texts a tool turn's terminal event can carry.
const (
	ErrTextToolBatch   = "tool batch refused"
	ErrTextToolRound   = "the final response must be text, not another tool round"
	ErrTextToolFailed  = "tool call failed"
	ErrTextToolResult  = "tool result refused"
	ErrTextToolReplay  = "replay refused a live tool call"
	ErrTextToolsNotSet = "tool set is malformed"
	ErrTextWorkspace   = "workspace unavailable"
)

// maxOfferedTools bounds one turn's offered tools (32 declared references,
// a tool set standing for its members).
const maxOfferedTools = localtools.MaxOfferedTools

// toolParameters is the schema offered for a declared name: names-only
// declarations carry no schema, so any JSON object is accepted and
// validated against the 8 KiB bound only.
const toolParameters = `{"type":"object"}`

// dispatcher answers one validated call of the batch (index from 1).
type dispatcher func(ctx context.Context, index int, call route.ToolCall, tool localtools.Tool) (localtools.Answer, error)

// errNoLiveBinding: the harness has no live executor. Freeze never selects
// the live source without a binding, so this is a broken invariant,
// reported as a failed call rather than a crash.
var errNoLiveBinding = errors.New("no live tool executor is bound in this invocation")

// errNoWorkspace: a workspace tool on a harness with no scratch copy. The
// turn's check finds the copy before send 1, so this is a broken invariant.
var errNoWorkspace = errors.New("no scratch workspace is open for this turn")

// liveDispatch answers a call of a live (not replayed) turn: Disabled, a
// matching recording, the unavailable stub, or (a live-bound tool) live.
func liveDispatch(live LiveTools, ws *workspace.Workspace) dispatcher {
	return func(ctx context.Context, _ int, call route.ToolCall, tool localtools.Tool) (localtools.Answer, error) {
		if err := ctx.Err(); err != nil {
			return localtools.Answer{}, err
		}
		a, err := localtools.Dispatch(tool, call.Arguments)
		if errors.Is(err, localtools.ErrNeedsWorkspace) {
			if ws == nil {
				return localtools.Answer{}, errNoWorkspace
			}
			// A tool error (a refused path, an edit that did not apply) is
			// a result the model sees; err is a cancellation or a copy that
			// cannot be read at all.
			r, err := ws.Call(ctx, tool.Name, call.Arguments)
			if err != nil {
				return localtools.Answer{}, err
			}
			return localtools.Answer{Text: r.Text, Source: localtools.SourceWorkspace, Dispatched: true}, nil
		}
		if !errors.Is(err, localtools.ErrNeedsBinding) {
			return a, err
		}
		if live == nil {
			return localtools.Answer{}, errNoLiveBinding
		}
		text, err := live(ctx, call, tool)
		if err != nil {
			return localtools.Answer{}, err
		}
		return localtools.Answer{Text: text, Source: localtools.SourceLive, Dispatched: true}, nil
	}
}

// ToolsToProto is the wire form of a tool set, ToolsFromProto's inverse.
func ToolsToProto(tools []localtools.Tool) []*sessionspb.ToolSpec {
	out := make([]*sessionspb.ToolSpec, 0, len(tools))
	for _, t := range tools {
		s := &sessionspb.ToolSpec{Name: t.Name, State: t.State, Source: t.Source, Pending: t.Pending,
			Function: t.Function, Reference: t.Reference, Description: t.Description, Parameters: t.Parameters, Table: t.Table}
		for _, c := range t.Recorded {
			s.Recorded = append(s.Recorded, &sessionspb.SavedCall{Arguments: c.Arguments, Result: c.Result})
		}
		out = append(out, s)
	}
	return out
}

// ToolsFromProto converts a session's tool set (nil for none, as a
// tool-free session journals it).
func ToolsFromProto(specs []*sessionspb.ToolSpec) []localtools.Tool {
	if len(specs) == 0 {
		return nil
	}
	out := make([]localtools.Tool, 0, len(specs))
	for _, s := range specs {
		t := localtools.Tool{Name: s.GetName(), State: s.GetState(), Source: s.GetSource(), Pending: s.GetPending(),
			Function: s.GetFunction(), Reference: s.GetReference(), Description: s.GetDescription(), Parameters: s.GetParameters(), Table: s.GetTable()}
		for _, c := range s.GetRecorded() {
			t.Recorded = append(t.Recorded, localtools.RecordedCall{Arguments: c.GetArguments(), Result: c.GetResult()})
		}
		out = append(out, t)
	}
	return out
}

// ToolDefs is what the model is offered: every declared tool, none left
// out, under its function name. A tool of VS Code's reference table (or an
// MCP stub) is offered with its journaled definition, as VS Code would
// offer it; any other name with kmx's generic one.
func ToolDefs(tools []localtools.Tool) []route.ToolDef {
	out := make([]route.ToolDef, 0, len(tools))
	for _, t := range tools {
		aliases := []string{t.Name}
		if t.Reference != "" {
			aliases = append(aliases, t.Reference)
		}
		if t.Description != "" || t.Parameters != "" {
			out = append(out, route.ToolDef{Name: t.FunctionName(), Description: t.Description, Parameters: t.Parameters, Aliases: aliases})
			continue
		}
		desc := "Declared tool " + t.Name + "."
		switch t.Source {
		case localtools.SourceDisabled:
			desc += " Disabled for this test."
		case localtools.SourceUnavailable:
			desc += " Not available in this test."
		case localtools.SourceRecorded:
			desc += " Answers from saved output in this test."
		}
		out = append(out, route.ToolDef{Name: t.FunctionName(), Description: desc, Parameters: toolParameters, Aliases: aliases})
	}
	return out
}

// checkToolRequest refuses a malformed tool-harness request before any model
// is resolved: judges stay tool-free, and the tool set must be well formed.
func checkToolRequest(req *sessionspb.HarnessTurnRequest) error {
	if req.GetPurpose() == PurposeJudge {
		return status.Error(codes.InvalidArgument, `a judge session is tool-free: judges run on the "chat" harness and see only the final answer`)
	}
	tools := req.GetTools()
	h := req.GetHarness()
	if len(tools) == 0 || len(tools) > maxOfferedTools {
		return status.Errorf(codes.InvalidArgument, "a %q turn offers 1 to %d tools; this one offers %d", h, maxOfferedTools, len(tools))
	}
	if (h == WorkspaceTools) != (req.GetWorkspace() != nil) {
		return status.Errorf(codes.InvalidArgument, "a %q turn names its workspace, and only it: place an example with a workspace on it", WorkspaceTools)
	}
	seen := map[string]bool{}
	functions := map[string]bool{}
	for i, t := range tools {
		if t.GetName() == "" || seen[t.GetName()] {
			return status.Errorf(codes.InvalidArgument, "tool %d has no name or repeats one: offer each declared tool once", i+1)
		}
		seen[t.GetName()] = true
		fn := t.GetFunction()
		if fn == "" {
			fn = t.GetName()
		}
		if functions[fn] {
			return status.Errorf(codes.InvalidArgument, "tool %d repeats the function name %q: offer each tool under its own", i+1, fn)
		}
		functions[fn] = true
		if t.GetState() != localtools.Enabled && t.GetState() != localtools.Disabled {
			return status.Errorf(codes.InvalidArgument, "tool %q has state %q: use Enabled or Disabled", t.GetName(), t.GetState())
		}
		switch t.GetSource() {
		case localtools.SourceDisabled, localtools.SourceRecorded, localtools.SourceUnavailable, localtools.SourceLive:
		case localtools.SourceWorkspace:
			if h != WorkspaceTools || !workspace.Answers(t.GetName()) {
				return status.Errorf(codes.InvalidArgument, "tool %q has source workspace: only a tool the workspace answers, on %q, has it", t.GetName(), WorkspaceTools)
			}
		default:
			return status.Errorf(codes.InvalidArgument, "tool %q has source %q: use disabled, recorded, unavailable, live or workspace", t.GetName(), t.GetSource())
		}
		if (t.GetState() == localtools.Disabled) != (t.GetSource() == localtools.SourceDisabled) {
			return status.Errorf(codes.InvalidArgument, "tool %q: a Disabled tool has the source disabled, and only it", t.GetName())
		}
	}
	return nil
}

// toolLimits are a tool harness's bounds on one turn: model sends, calls in
// one batch (localtools.MaxCalls on both) and calls in all.
type toolLimits struct {
	sends, calls int
}

// limitsOf is the bounds of the named tool harness: kmx-local-tools-v1
// sends twice (one batch), kmx-workspace-tools-v1 up to eight times, with
// at most 24 calls in all.
func limitsOf(harnessName string) toolLimits {
	if harnessName == WorkspaceTools {
		return toolLimits{sends: MaxWorkspaceSends, calls: MaxWorkspaceCalls}
	}
	return toolLimits{sends: 2, calls: localtools.MaxCalls}
}

// Bounds of a kmx-workspace-tools-v1 turn.
const (
	// MaxWorkspaceSends is the most model sends one turn makes.
	MaxWorkspaceSends = 8
	// MaxWorkspaceCalls is the most tool calls one turn answers, over all
	// its batches.
	MaxWorkspaceCalls = 24
)

// runTools runs one turn of a tool harness. Send 1 offers the tools; while
// a response requests a batch of calls (and sends are left), the whole
// batch is validated before its first call (localtools.ValidateBatch, call
// IDs unique over the turn, the running total of calls within the turn's
// bound), each call is answered in order, and the next send carries every
// result. The turn ends with a response that is text; a batch on the last
// send fails it. kmx-local-tools-v1 makes two sends at most,
// kmx-workspace-tools-v1 eight, with 24 calls in all, and then (live) the
// workspace outcome. Nothing is retried, forced, parallel or resent. Call
// indexes count from 1 over the whole turn.
func runTools(ctx context.Context, stream grpc.ServerStreamingServer[sessionspb.HarnessEvent],
	model route.Model, turn int, req *sessionspb.HarnessTurnRequest, dispatch dispatcher, liveCalls func() int32, outcome func() ([]byte, error)) error {
	fail := func(text string) error {
		return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "", text, liveCalls())
	}
	lim := limitsOf(req.GetHarness())
	tools := ToolsFromProto(req.GetTools())
	// A conversation turn, or a later turn of a multi-turn example, carries
	// its history (the earlier turns' inputs and final answers, never an
	// earlier turn's tool exchange: each turn's trace is its own); a
	// one-turn example has none.
	mreq := route.ChatRequestWithHistory(req.GetModel().GetModel(), req.GetInstructions(), routeHistory(req.GetHistory()), req.GetInput())
	mreq.Tools = ToolDefs(tools)
	msgs := mreq.Messages
	total := 0
	ids := map[string]bool{}
	for sendNo := 1; ; sendNo++ {
		c, done, err := send(ctx, stream, model, turn, sendNo, route.Request{Model: mreq.Model, Messages: msgs, Tools: mreq.Tools, ToolRounds: lim.sends > 2}, req, liveCalls)
		if done {
			return err
		}
		if len(c.ToolCalls) == 0 {
			if outcome != nil {
				b, err := outcome()
				if err != nil {
					return fail(ErrTextWorkspace + ": " + err.Error())
				}
				if err := stream.Send(&sessionspb.HarnessEvent{Event: &sessionspb.HarnessEvent_WorkspaceOutcome{
					WorkspaceOutcome: &sessionspb.WorkspaceOutcomeEvent{OutcomeJson: b},
				}}); err != nil {
					return fmt.Errorf("send workspace outcome event: %w", err)
				}
			}
			return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_COMPLETED, c.Text, "", liveCalls())
		}
		if sendNo >= lim.sends {
			if lim.sends == 2 {
				return fail(ErrTextToolRound)
			}
			return fail(fmt.Sprintf("%s: send %d of at most %d requested tools", ErrTextToolRound, sendNo, lim.sends))
		}
		// The whole batch is validated before its first call.
		if err := localtools.ValidateBatch(c.ToolCalls, tools); err != nil {
			return fail(ErrTextToolBatch + ": " + err.Error())
		}
		if total+len(c.ToolCalls) > lim.calls {
			return fail(fmt.Sprintf("%s: the batch would bring the turn to %d tool calls; at most %d are allowed in one turn", ErrTextToolBatch, total+len(c.ToolCalls), lim.calls))
		}
		for i, tc := range c.ToolCalls {
			if ids[tc.ID] {
				return fail(fmt.Sprintf("%s: tool call %d repeats a call ID of an earlier batch", ErrTextToolBatch, i+1))
			}
		}
		for _, tc := range c.ToolCalls {
			ids[tc.ID] = true
		}
		msgs = append(msgs, route.Message{Role: "assistant", Content: c.Text, ToolCalls: c.ToolCalls})
		for _, tc := range c.ToolCalls {
			total++
			res, stop := answerCall(ctx, stream, turn, total, tc, tools, dispatch, req, liveCalls)
			if stop != nil {
				return stop.err
			}
			msgs = append(msgs, route.Message{Role: "tool", Content: res, ToolCallID: tc.ID})
		}
	}
}

// stopTurn is a turn ended while answering a call: err is what runTools
// returns (nil once the terminal is sent).
type stopTurn struct{ err error }

// answerCall streams one validated call (index idx of the turn), answers it
// and streams its result; stop is non-nil when the turn has ended.
func answerCall(ctx context.Context, stream grpc.ServerStreamingServer[sessionspb.HarnessEvent], turn, idx int, tc route.ToolCall,
	tools []localtools.Tool, dispatch dispatcher, req *sessionspb.HarnessTurnRequest, liveCalls func() int32) (string, *stopTurn) {
	fail := func(text string) *stopTurn {
		return &stopTurn{sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "", text, liveCalls())}
	}
	if err := ctx.Err(); err != nil {
		state, text, _ := cancelled(ctx, err)
		_ = sendTerminal(stream, state, "", text, liveCalls())
		return "", &stopTurn{status.FromContextError(err).Err()}
	}
	tool, _ := localtools.Find(tools, tc.Name)
	callJSON, err := journal.Encode(journal.ToolCall{Turn: turn, Index: idx, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	if err != nil {
		return "", fail(ErrTextToolFailed)
	}
	if err := stream.Send(&sessionspb.HarnessEvent{Event: &sessionspb.HarnessEvent_ToolCall{
		ToolCall: &sessionspb.ToolCallEvent{CallJson: callJSON},
	}}); err != nil {
		return "", &stopTurn{fmt.Errorf("send tool call event: %w", err)}
	}
	ans, err := dispatch(ctx, idx, tc, tool)
	if err != nil {
		if state, text, ok := cancelled(ctx, err); ok {
			_ = sendTerminal(stream, state, "", text, liveCalls())
			return "", &stopTurn{status.FromContextError(ctx.Err()).Err()}
		}
		if errors.Is(err, errReplayRefused) {
			return "", fail(ErrTextToolReplay)
		}
		return "", fail(errorText(ErrTextToolFailed, err, req))
	}
	if err := localtools.CheckResult(ans.Text); err != nil {
		return "", fail(ErrTextToolResult + ": " + err.Error())
	}
	resJSON, err := journal.Encode(journal.ToolResult{Turn: turn, Index: idx, ID: tc.ID, Name: tc.Name,
		Source: ans.Source, Dispatched: ans.Dispatched, Result: ans.Text})
	if err != nil {
		return "", fail(ErrTextToolResult)
	}
	if err := stream.Send(&sessionspb.HarnessEvent{Event: &sessionspb.HarnessEvent_ToolResult{
		ToolResult: &sessionspb.ToolResultEvent{ResultJson: resJSON},
	}}); err != nil {
		return "", &stopTurn{fmt.Errorf("send tool result event: %w", err)}
	}
	return ans.Text, nil
}

// replayTools replays a journaled tool turn: the model answers only from the
// recorded completions, and each call only from its journaled result. Any
// other model or tool call is refused and counted; no source is consulted.
func replayTools(ctx context.Context, stream grpc.ServerStreamingServer[sessionspb.HarnessEvent],
	rm *replayModel, turn int, req *sessionspb.HarnessTurnRequest) error {
	var results []journal.ToolResult
	for _, b := range req.GetReplay().GetToolResultJson() {
		var r journal.ToolResult
		if err := journal.Decode(b, &r); err != nil {
			return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "", ErrTextRecordingBad, 0)
		}
		results = append(results, r)
	}
	var refused atomic.Int32
	dispatch := func(ctx context.Context, index int, call route.ToolCall, _ localtools.Tool) (localtools.Answer, error) {
		if err := ctx.Err(); err != nil {
			return localtools.Answer{}, err
		}
		if index > len(results) || results[index-1].Index != index || results[index-1].ID != call.ID || results[index-1].Name != call.Name {
			refused.Add(1)
			return localtools.Answer{}, errReplayRefused
		}
		r := results[index-1]
		return localtools.Answer{Text: r.Result, Source: r.Source, Dispatched: r.Dispatched}, nil
	}
	live := func() int32 { return rm.liveCalls() + refused.Load() }
	// A replay never opens a workspace: its results are the journaled
	// ones, and the outcome stays the journaled record.
	return runTools(ctx, stream, rm, turn, req, dispatch, live, nil)
}
