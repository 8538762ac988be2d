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
)

// Fixed texts a tool turn's terminal event can carry.
const (
	ErrTextToolBatch   = "tool batch refused"
	ErrTextToolRound   = "the final response must be text, not another tool round"
	ErrTextToolFailed  = "tool call failed"
	ErrTextToolResult  = "tool result refused"
	ErrTextToolReplay  = "replay refused a live tool call"
	ErrTextToolsNotSet = "tool set is malformed"
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

// liveDispatch answers a call of a live (not replayed) turn: Disabled, a
// matching recording, the unavailable stub, or (a live-bound tool) live.
func liveDispatch(live LiveTools) dispatcher {
	return func(ctx context.Context, _ int, call route.ToolCall, tool localtools.Tool) (localtools.Answer, error) {
		if err := ctx.Err(); err != nil {
			return localtools.Answer{}, err
		}
		a, err := localtools.Dispatch(tool, call.Arguments)
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

// ToolsFromProto converts a session's tool set.
func ToolsFromProto(specs []*sessionspb.ToolSpec) []localtools.Tool {
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
	if len(tools) == 0 || len(tools) > maxOfferedTools {
		return status.Errorf(codes.InvalidArgument, "a %q turn offers 1 to %d tools; this one offers %d", LocalTools, maxOfferedTools, len(tools))
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
		default:
			return status.Errorf(codes.InvalidArgument, "tool %q has source %q: use disabled, recorded, unavailable or live", t.GetName(), t.GetSource())
		}
		if (t.GetState() == localtools.Disabled) != (t.GetSource() == localtools.SourceDisabled) {
			return status.Errorf(codes.InvalidArgument, "tool %q: a Disabled tool has the source disabled, and only it", t.GetName())
		}
	}
	return nil
}

// runTools runs one kmx-local-tools-v1 turn: send 1 offers the tools; a
// first response with a batch of calls has the whole batch validated, then
// each call answered in order, then send 2, whose response must be text.
// Nothing is retried, forced, parallel or resent.
func runTools(ctx context.Context, stream grpc.ServerStreamingServer[sessionspb.HarnessEvent],
	model route.Model, turn int, req *sessionspb.HarnessTurnRequest, dispatch dispatcher, liveCalls func() int32) error {
	fail := func(text string) error {
		return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "", text, liveCalls())
	}
	tools := ToolsFromProto(req.GetTools())
	// A conversation turn carries its history (user inputs and final
	// answers, never an earlier turn's tool exchange); an example has none.
	mreq := route.ChatRequestWithHistory(req.GetModel().GetModel(), req.GetInstructions(), History(req.GetHistory()), req.GetInput())
	mreq.Tools = ToolDefs(tools)
	c, done, err := send(ctx, stream, model, turn, 1, mreq, req, liveCalls)
	if done {
		return err
	}
	if len(c.ToolCalls) == 0 {
		return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_COMPLETED, c.Text, "", liveCalls())
	}
	// The whole batch is validated before its first call.
	if err := localtools.ValidateBatch(c.ToolCalls, tools); err != nil {
		return fail(ErrTextToolBatch + ": " + err.Error())
	}
	msgs := append(mreq.Messages, route.Message{Role: "assistant", Content: c.Text, ToolCalls: c.ToolCalls})
	for i, tc := range c.ToolCalls {
		idx := i + 1
		if err := ctx.Err(); err != nil {
			state, text, _ := cancelled(ctx, err)
			_ = sendTerminal(stream, state, "", text, liveCalls())
			return status.FromContextError(err).Err()
		}
		tool, _ := localtools.Find(tools, tc.Name)
		callJSON, err := journal.Encode(journal.ToolCall{Turn: turn, Index: idx, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		if err != nil {
			return fail(ErrTextToolFailed)
		}
		if err := stream.Send(&sessionspb.HarnessEvent{Event: &sessionspb.HarnessEvent_ToolCall{
			ToolCall: &sessionspb.ToolCallEvent{CallJson: callJSON},
		}}); err != nil {
			return fmt.Errorf("send tool call event: %w", err)
		}
		ans, err := dispatch(ctx, idx, tc, tool)
		if err != nil {
			if state, text, ok := cancelled(ctx, err); ok {
				_ = sendTerminal(stream, state, "", text, liveCalls())
				return status.FromContextError(ctx.Err()).Err()
			}
			if errors.Is(err, errReplayRefused) {
				return fail(ErrTextToolReplay)
			}
			return fail(errorText(ErrTextToolFailed, err, req))
		}
		if err := localtools.CheckResult(ans.Text); err != nil {
			return fail(ErrTextToolResult + ": " + err.Error())
		}
		resJSON, err := journal.Encode(journal.ToolResult{Turn: turn, Index: idx, ID: tc.ID, Name: tc.Name,
			Source: ans.Source, Dispatched: ans.Dispatched, Result: ans.Text})
		if err != nil {
			return fail(ErrTextToolResult)
		}
		if err := stream.Send(&sessionspb.HarnessEvent{Event: &sessionspb.HarnessEvent_ToolResult{
			ToolResult: &sessionspb.ToolResultEvent{ResultJson: resJSON},
		}}); err != nil {
			return fmt.Errorf("send tool result event: %w", err)
		}
		msgs = append(msgs, route.Message{Role: "tool", Content: ans.Text, ToolCallID: tc.ID})
	}
	mreq2 := route.Request{Model: mreq.Model, Messages: msgs, Tools: mreq.Tools}
	c2, done, err := send(ctx, stream, model, turn, 2, mreq2, req, liveCalls)
	if done {
		return err
	}
	if len(c2.ToolCalls) > 0 {
		return fail(ErrTextToolRound)
	}
	return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_COMPLETED, c2.Text, "", liveCalls())
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
	return runTools(ctx, stream, rm, turn, req, dispatch, live)
}
