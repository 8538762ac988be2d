// Package harness owns the harnesses a session runs on: the gRPC service that
// runs one turn and streams what happened back to Sessions, which journals
// it. "chat" sends exactly one model request and never runs tools.
// "kmx-local-tools-v1" (tools.go) offers the session's frozen tool set,
// lets the first response request a batch of at most five calls, validates
// the whole batch before the first call, answers the calls serially and
// makes one follow-up send whose response must be text.
//
// The harness is stateless and never journals, retries or falls back to
// another model. In replay mode it answers only from the recorded
// completions and tool results: it never calls its Resolver or a tool
// source, so a replay cannot reach a real model or tool, and any call the
// recording does not cover is refused and counted.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// Harness names a Placer can choose.
const (
	// Chat is the tool-free harness this package serves.
	Chat = "chat"
	// LocalTools is the tool-running harness of SPEC §9 (tools.go).
	LocalTools = "kmx-local-tools-v1"
	// WorkspaceTools is the tool harness of an example with a fixture
	// workspace (tools.go): up to eight sends and 24 calls, the workspace
	// tools answered in the example's scratch copy, and the turn's
	// workspace outcome journaled after its final response.
	WorkspaceTools = "kmx-workspace-tools-v1"
)

// IsTools reports whether the harness named h runs tools.
func IsTools(h string) bool { return h == LocalTools || h == WorkspaceTools }

// Workspaces finds an example's scratch copy by the key the runner
// registered it under (sessionspb.WorkspaceRef.key). The process that
// hosts the harness holds the copies; a key is never a path.
type Workspaces interface {
	Workspace(key string) (*workspace.Workspace, bool)
}

// Roles of a conversation's history messages.
const (
	RoleUser      = journal.RoleUser
	RoleAssistant = journal.RoleAssistant
)

// HistoryToProto is the wire form of a turn's history (nil for none),
// HistoryFromProto's inverse: the one place a history message becomes
// protobuf, where a turn crosses the Sessions or the harness listener.
func HistoryToProto(msgs []journal.HistoryMessage) []*sessionspb.ChatMessage {
	if len(msgs) == 0 {
		return nil
	}
	out := make([]*sessionspb.ChatMessage, len(msgs))
	for i, m := range msgs {
		out[i] = &sessionspb.ChatMessage{Role: m.Role, Content: m.Content}
	}
	return out
}

// HistoryFromProto converts a turn's history from the wire (nil for none).
func HistoryFromProto(msgs []*sessionspb.ChatMessage) []journal.HistoryMessage {
	if len(msgs) == 0 {
		return nil
	}
	out := make([]journal.HistoryMessage, len(msgs))
	for i, m := range msgs {
		out[i] = journal.HistoryMessage{Role: m.GetRole(), Content: m.GetContent()}
	}
	return out
}

// routeHistory is a turn's history as the model request's messages.
func routeHistory(msgs []*sessionspb.ChatMessage) []route.Message {
	if len(msgs) == 0 {
		return nil
	}
	out := make([]route.Message, len(msgs))
	for i, m := range msgs {
		out[i] = route.Message{Role: m.GetRole(), Content: m.GetContent()}
	}
	return out
}

// Session purposes.
const (
	PurposeAgent = "agent"
	PurposeJudge = "judge"
)

// Fixed texts a terminal event can carry. They name the class of problem only.
const (
	ErrTextCancelled      = "turn cancelled"
	ErrTextDeadline       = "turn deadline exceeded"
	ErrTextRouteFailed    = "model route unavailable"
	ErrTextModelFailed    = "model call failed"
	ErrTextRecordingBad   = "recorded exchange is malformed"
	ErrTextReplayRefusal  = "replay refused a live model call"
	ErrTextDigestFailed   = "model request could not be encoded"
	maxTerminalErrorBytes = 300
)

// Resolver returns the model a live turn sends to. purpose is "agent" or
// "judge": the judge's model may differ from the agent's even on the same
// route (the fake judge scores rubrics, the fake agent follows directives).
type Resolver func(purpose string, id route.Identity) (route.Model, error)

// LiveTools answers one call of a live-bound tool (source live) that no
// recording answers: the invocation's frozen binding to a host's executor
// (in the editor, vscode.lm.invokeTool). It returns the tool's text; an
// error fails the example's turn, and nothing is retried. Replay never
// reaches it.
type LiveTools func(ctx context.Context, call route.ToolCall, tool localtools.Tool) (string, error)

// Server is the chat harness. It is safe for concurrent use.
type Server struct {
	sessionspb.UnimplementedHarnessServer
	resolve    Resolver
	live       LiveTools
	workspaces Workspaces
}

// New returns a chat harness that resolves live models through resolve.
func New(resolve Resolver) *Server {
	return &Server{resolve: resolve}
}

// NewWithLiveTools is New whose tool turns answer live-bound tools through
// live (nil: none are bound).
func NewWithLiveTools(resolve Resolver, live LiveTools) *Server {
	return &Server{resolve: resolve, live: live}
}

// NewWithWorkspaces is NewWithLiveTools whose kmx-workspace-tools-v1 turns
// find their scratch copies in ws (nil: none; such a turn fails).
func NewWithWorkspaces(resolve Resolver, live LiveTools, ws Workspaces) *Server {
	return &Server{resolve: resolve, live: live, workspaces: ws}
}

// Turn runs turns one after another on one stream and streams their
// events. The caller sends each turn's request first. Malformed requests are
// refused with a gRPC status before any model is resolved; everything that
// happens after that ends in a Terminal event (unless the caller has gone
// away). In a live turn, a model request or tool call event is acted on
// only after the caller says its record is committed (committedStream).
//
// Once a unit of work has ended with its terminal (a turn, or a then_replay
// turn and its replay) the handler waits for the next turn request on the
// same stream: opening a stream costs several times what a turn's messages
// do. Every unit is built from its own request alone; nothing of an earlier
// turn is kept. The caller closing its side, or leaving, ends the stream;
// an error or a refusal ends it with its status, so a stream is never
// reused after anything but a unit that ended cleanly.
func (s *Server) Turn(in grpc.BidiStreamingServer[sessionspb.HarnessInput, sessionspb.HarnessEvent]) error {
	for first := true; ; first = false {
		next, err := in.Recv()
		if err != nil {
			if first {
				return status.Error(codes.Canceled, "turn stream ended before its turn request")
			}
			return nil // the caller is done with the stream (EOF), or has gone
		}
		if err := s.unit(next, in); err != nil {
			if errors.Is(err, errStreamLeft) {
				return nil
			}
			return err
		}
	}
}

// errStreamLeft is a unit's caller closing or leaving the stream where the
// unit waited for its next input: the stream ends without a status.
var errStreamLeft = errors.New("the caller left the turn stream")

// unit runs one unit of work that first begins: a turn, and after a
// then_replay live turn its replay.
func (s *Server) unit(first *sessionspb.HarnessInput, in grpc.BidiStreamingServer[sessionspb.HarnessInput, sessionspb.HarnessEvent]) error {
	req := first.GetStart()
	if req == nil {
		return status.Error(codes.InvalidArgument, "turn stream must begin each turn with the turn request: send start first")
	}
	if err := checkRequest(req); err != nil {
		return err
	}
	if req.GetReplay() != nil {
		return s.turn(req, in)
	}
	if err := s.turn(req, committedStream{in}); err != nil || !req.GetThenReplay() {
		return err
	}
	return s.replayAfter(in)
}

// replayAfter runs the replay that may follow a then_replay live turn on the
// same stream. The replay input carries everything the replay uses (the
// turn as read back from the journal); nothing of the live turn is kept, and
// the replay runs exactly as one that opened its own stream: its model is
// built from the recording alone and never resolved. The caller closing or
// leaving the stream instead ends it (errStreamLeft).
func (s *Server) replayAfter(in grpc.BidiStreamingServer[sessionspb.HarnessInput, sessionspb.HarnessEvent]) error {
	next, err := in.Recv()
	if err != nil {
		return errStreamLeft // no replay wanted (EOF), or the caller has gone
	}
	req := next.GetReplay()
	if req == nil || req.GetReplay() == nil {
		return status.Error(codes.InvalidArgument, "turn stream: after a live turn's terminal only its replay may follow: send replay with the recorded exchange")
	}
	if err := checkRequest(req); err != nil {
		return err
	}
	return s.turn(req, in)
}

// committedStream is a live turn's event stream. Its Send of a model request
// or a tool call returns only once the caller has answered "committed", so
// the harness never sends a request or makes a call whose record a crash
// could lose: the record is durable first.
type committedStream struct {
	grpc.BidiStreamingServer[sessionspb.HarnessInput, sessionspb.HarnessEvent]
}

func (c committedStream) Send(ev *sessionspb.HarnessEvent) error {
	if err := c.BidiStreamingServer.Send(ev); err != nil {
		return err
	}
	switch ev.GetEvent().(type) {
	case *sessionspb.HarnessEvent_ModelRequest, *sessionspb.HarnessEvent_ToolCall:
	default:
		return nil
	}
	in, err := c.Recv()
	if err != nil {
		return fmt.Errorf("wait for the record to be committed: %w", err)
	}
	if in.GetCommitted() == nil {
		return status.Error(codes.InvalidArgument, "turn stream: expected committed after a model request or tool call, before anything else")
	}
	return nil
}

// turn runs a checked turn request, streaming its events to stream.
func (s *Server) turn(req *sessionspb.HarnessTurnRequest, stream grpc.ServerStreamingServer[sessionspb.HarnessEvent]) error {
	ctx, cancel := turnContext(stream.Context(), req)
	defer cancel()
	id := route.Identity{Route: req.GetModel().GetRoute(), Model: req.GetModel().GetModel()}
	turn := int(req.GetTurn())

	if rec := req.GetReplay(); rec != nil {
		// Replay: the model is built from the recording alone. s.resolve is
		// deliberately out of reach on this path.
		rm, err := newReplayModel(id.Model, rec)
		if err != nil {
			return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "", ErrTextRecordingBad, 0)
		}
		if IsTools(req.GetHarness()) {
			return replayTools(ctx, stream, rm, turn, req)
		}
		return runChat(ctx, stream, rm, turn, req, rm.liveCalls)
	}

	if s.resolve == nil {
		return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "", ErrTextRouteFailed, 0)
	}
	model, err := s.resolve(req.GetPurpose(), id)
	if err != nil {
		return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "",
			errorText(ErrTextRouteFailed, err, req), 0)
	}
	counted := &route.Counted{Model: model}
	switch req.GetHarness() {
	case LocalTools:
		return runTools(ctx, stream, counted, turn, req, liveDispatch(s.live, nil), counted.Calls, nil)
	case WorkspaceTools:
		// The copy is found before send 1: without it nothing is sent.
		var ws *workspace.Workspace
		ok := false
		if s.workspaces != nil {
			ws, ok = s.workspaces.Workspace(req.GetWorkspace().GetKey())
		}
		if !ok {
			return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "",
				ErrTextWorkspace+": no scratch copy is open under the session's workspace key", 0)
		}
		return runTools(ctx, stream, counted, turn, req, liveDispatch(s.live, ws), counted.Calls, workspaceOutcome(ws, turn, req.GetWorkspace().GetPaths()))
	}
	return runChat(ctx, stream, counted, turn, req, counted.Calls)
}

// turnContext is the context one turn runs in: the stream's (the caller
// leaving ends it), bounded by the turn's own deadline when the request
// carries one. A stream carries many turns, so the deadline comes with each
// turn request rather than with the stream (grpc-timeout). It is the
// caller's deadline itself, the same instant: the caller's timer and this
// one may fire in either order, and either way the turn is cancelled at its
// deadline.
func turnContext(ctx context.Context, req *sessionspb.HarnessTurnRequest) (context.Context, context.CancelFunc) {
	if d := req.GetDeadlineUnixNano(); d != 0 {
		return context.WithDeadline(ctx, time.Unix(0, d))
	}
	return ctx, func() {}
}

// runChat sends the one request of a chat turn to model and streams the
// events. liveCalls reports the live-call count for the terminal event.
func runChat(ctx context.Context, stream grpc.ServerStreamingServer[sessionspb.HarnessEvent],
	model route.Model, turn int, req *sessionspb.HarnessTurnRequest, liveCalls func() int32) error {
	mreq := route.ChatRequestWithHistory(req.GetModel().GetModel(), req.GetInstructions(), routeHistory(req.GetHistory()), req.GetInput())
	c, done, err := send(ctx, stream, model, turn, 0, mreq, req, liveCalls)
	if done {
		return err
	}
	return sendTerminal(stream, sessionspb.TurnState_TURN_STATE_COMPLETED, c.Text, "", liveCalls())
}

// send makes one model send (no retry whatever the error) and streams its
// request and completion events. sendNo is 0 on chat, 1 or 2 on a tool
// turn. When done is true the turn has ended (its terminal is sent, or the
// stream broke: err says which); otherwise c is the completion.
func send(ctx context.Context, stream grpc.ServerStreamingServer[sessionspb.HarnessEvent], model route.Model,
	turn, sendNo int, mreq route.Request, req *sessionspb.HarnessTurnRequest, liveCalls func() int32) (c route.Completion, done bool, err error) {
	sum, size, err := RequestDigest(mreq)
	if err != nil {
		return c, true, sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "", ErrTextDigestFailed, liveCalls())
	}
	reqJSON, err := journal.Encode(journal.ModelRequest{Turn: turn, Model: mreq.Model, SHA256: sum, Bytes: size, Send: sendNo})
	if err != nil {
		return c, true, sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "", ErrTextDigestFailed, liveCalls())
	}
	if err := stream.Send(&sessionspb.HarnessEvent{Event: &sessionspb.HarnessEvent_ModelRequest{
		ModelRequest: &sessionspb.ModelRequestEvent{RequestJson: reqJSON},
	}}); err != nil {
		return c, true, fmt.Errorf("send model request event: %w", err)
	}

	c, err = model.Complete(ctx, mreq)
	if err != nil {
		if state, text, ok := cancelled(ctx, err); ok {
			// The caller is usually gone; the send is best effort and
			// Sessions journals the cancellation itself if it never arrives.
			_ = sendTerminal(stream, state, "", text, liveCalls())
			return c, true, status.FromContextError(ctx.Err()).Err()
		}
		return c, true, sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "",
			errorText(ErrTextModelFailed, err, req), liveCalls())
	}
	if shape := credentialShape(c); shape != "" {
		// Before the completion event: nothing journals, shows or judges
		// the reply. The text names the shape, never the value.
		return c, true, sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "",
			credentialRefusal(shape), liveCalls())
	}
	mc := journal.ModelCompletion{Turn: turn, Model: c.Model, Text: c.Text, FinishReason: c.FinishReason, Send: sendNo}
	if u := c.Usage; u != nil {
		mc.Usage = &journal.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	}
	for _, tc := range c.ToolCalls {
		mc.ToolCalls = append(mc.ToolCalls, journal.ToolCallRequest{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	compJSON, err := journal.Encode(mc)
	if err != nil {
		return c, true, sendTerminal(stream, sessionspb.TurnState_TURN_STATE_FAILED, "", ErrTextModelFailed, liveCalls())
	}
	if err := stream.Send(&sessionspb.HarnessEvent{Event: &sessionspb.HarnessEvent_ModelCompletion{
		ModelCompletion: &sessionspb.ModelCompletionEvent{CompletionJson: compJSON},
	}}); err != nil {
		return c, true, fmt.Errorf("send model completion event: %w", err)
	}
	return c, false, nil
}

// credentialShape names the first credential shape in a completion's answer
// or its tool calls' arguments, or returns "". kmx never journals
// credential-shaped text, whichever route the reply came from.
func credentialShape(c route.Completion) string {
	if f := secrets.Scan(c.Text); len(f) > 0 {
		return f[0].Shape
	}
	for _, tc := range c.ToolCalls {
		if f := secrets.Scan(tc.Arguments); len(f) > 0 {
			return f[0].Shape
		}
	}
	return ""
}

// credentialRefusal is the terminal error of a reply that holds
// credential-shaped text: the class and the shape's name, never the value.
func credentialRefusal(shape string) string {
	return ErrTextModelFailed + " (credential): the reply holds credential-shaped text (" +
		shape + "), so kmx discarded it before anything recorded or showed it"
}

func sendTerminal(stream grpc.ServerStreamingServer[sessionspb.HarnessEvent], state sessionspb.TurnState, answer, errText string, liveCalls int32) error {
	err := stream.Send(&sessionspb.HarnessEvent{Event: &sessionspb.HarnessEvent_Terminal{
		Terminal: &sessionspb.TerminalEvent{State: state, Answer: answer, Error: errText, LiveCalls: liveCalls},
	}})
	if err != nil {
		return fmt.Errorf("send terminal event: %w", err)
	}
	return nil
}

// cancelled reports whether a model error is the turn's context ending, and
// which terminal state and text describe it.
func cancelled(ctx context.Context, err error) (sessionspb.TurnState, string, bool) {
	switch {
	case ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		return 0, "", false
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || (ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)):
		return sessionspb.TurnState_TURN_STATE_CANCELLED, ErrTextDeadline, true
	default:
		return sessionspb.TurnState_TURN_STATE_CANCELLED, ErrTextCancelled, true
	}
}

// errorText builds a terminal error from a fixed prefix and a route error.
// Routes promise class-of-problem texts; as a second line of defence, a text
// that contains the turn's instructions or input is dropped, so a prompt
// can never reach the journal through an error.
//
// A *route.ReplyError is built only from kmx's own fixed texts, so it is
// kept whole and its class named ("model call failed (redirect): …"): a
// short input such as "hi" appears inside those texts by chance and must not
// blank the class a user needs to see.
func errorText(prefix string, err error, req *sessionspb.HarnessTurnRequest) string {
	msg := err.Error()
	var reply *route.ReplyError
	if errors.As(err, &reply) {
		return prefix + " (" + string(reply.Class) + "): " + strings.TrimPrefix(reply.Error(), "compatible route: ")
	}
	prompt := []string{req.GetInstructions(), req.GetInput()}
	for _, m := range req.GetHistory() {
		prompt = append(prompt, m.GetContent())
	}
	for _, secret := range prompt {
		if secret != "" && strings.Contains(msg, secret) {
			return prefix
		}
	}
	if len(msg) > maxTerminalErrorBytes {
		msg = msg[:maxTerminalErrorBytes]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	if msg == "" {
		return prefix
	}
	return prefix + ": " + msg
}

func checkRequest(req *sessionspb.HarnessTurnRequest) error {
	switch h := req.GetHarness(); h {
	case Chat:
		if len(req.GetTools()) > 0 {
			return status.Error(codes.InvalidArgument, `the "chat" harness is tool-free: a session with tools is placed on "kmx-local-tools-v1"`)
		}
	case LocalTools, WorkspaceTools:
		if err := checkToolRequest(req); err != nil {
			return err
		}
	default:
		return status.Errorf(codes.InvalidArgument, "harness %q is not served here: this host serves %q, %q and %q", h, Chat, LocalTools, WorkspaceTools)
	}
	if req.GetModel().GetRoute() == "" || req.GetModel().GetModel() == "" {
		return status.Error(codes.InvalidArgument, "turn request has no model identity: set model.route and model.model")
	}
	if req.GetTurn() < 1 {
		return status.Error(codes.InvalidArgument, "turn request has no turn number: turns count from 1")
	}
	for i, m := range req.GetHistory() {
		if m.GetRole() != RoleUser && m.GetRole() != RoleAssistant {
			return status.Errorf(codes.InvalidArgument, "turn request history message %d has role %q: use %q or %q", i+1, m.GetRole(), RoleUser, RoleAssistant)
		}
	}
	if req.GetReplay() == nil {
		switch req.GetPurpose() {
		case PurposeAgent, PurposeJudge:
		default:
			return status.Errorf(codes.InvalidArgument, "turn request purpose %q is not known: use %q or %q", req.GetPurpose(), PurposeAgent, PurposeJudge)
		}
	}
	return nil
}

// workspaceOutcome returns what a live kmx-workspace-tools-v1 turn journals
// after its final response: the copy's changes and the final state of the
// asserted paths (workspace.Outcome), as a workspace.outcome payload.
func workspaceOutcome(ws *workspace.Workspace, turn int, paths []string) func() ([]byte, error) {
	return func() ([]byte, error) {
		o, err := ws.Outcome(paths)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encode the workspace outcome: %w", err)
		}
		return journal.Encode(journal.WorkspaceOutcome{Turn: turn, Outcome: b})
	}
}
