package lsp

import (
	"context"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/conversation"
)

// chat serves kmx/chat (and kmx.openChat): without input the file's
// conversation as the journal holds it, replayed with zero model calls;
// with input one new turn, sent with that history. A turn releases the
// message queue as soon as it starts, so typing and $/cancelRequest keep
// flowing; cancelling it answers only after the model call in flight has
// been torn down (the conversation package joins it).
func (s *Server) chat(ctx context.Context, p ChatParams) (*ChatResult, error) {
	req, err := s.chatRequest(MethodChat, p)
	if err != nil {
		return nil, err
	}
	if p.Input == nil {
		res, err := conversation.History(ctx, req)
		return s.chatResult(MethodChat, p.URI, res, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	id, _ := s.work.start(cancel)
	defer s.work.finish(id, nil)
	release(ctx)
	res, err := conversation.Say(ctx, req, *p.Input)
	return s.chatResult(MethodChat, p.URI, res, err)
}

// chatDiscard serves kmx/chatDiscard: records the discard of the turn
// whose outcome the conversation never recorded.
func (s *Server) chatDiscard(ctx context.Context, p ChatParams) (*ChatResult, error) {
	req, err := s.chatRequest(MethodChatDiscard, p)
	if err != nil {
		return nil, err
	}
	res, err := conversation.Discard(ctx, req)
	return s.chatResult(MethodChatDiscard, p.URI, res, err)
}

func (s *Server) chatRequest(method string, p ChatParams) (conversation.Request, error) {
	if p.URI == "" {
		return conversation.Request{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: uri is required", method)
	}
	path := uriPath(p.URI)
	if path == "" {
		return conversation.Request{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %q is not a file on disk; save the file to chat with it", method, p.URI)
	}
	req := conversation.Request{File: path, ID: p.Conversation, Route: s.previewOptions(p.Model).Options}
	req.Route.Version = s.opts.Version
	if p.Input != nil {
		src, err := s.source(method, p.URI)
		if err != nil {
			return conversation.Request{}, err
		}
		req.Source = src.text
	}
	return req, nil
}

// chatResult turns the engine's outcome into the result: refusals and turns
// that did not answer are results the panel shows, not JSON-RPC errors.
func (s *Server) chatResult(method, uri string, res *conversation.Transcript, err error) (*ChatResult, error) {
	out := &ChatResult{ProtocolVersion: ProtocolVersion, URI: uri, Chat: res}
	if err == nil {
		return out, nil
	}
	if r, ok := conversation.AsRefusal(err); ok {
		out.Refusal = &ChatRefusal{Code: r.Code, Message: r.Msg, Next: r.Next, Turn: r.Turn}
		return out, nil
	}
	if res != nil && res.Turn != nil {
		out.Error = res.Turn.Error
		if out.Error == "" {
			out.Error = err.Error()
		}
		return out, nil
	}
	s.log.Error("chat failed", "method", method, "err", err)
	return nil, requestFailed(method, err)
}
