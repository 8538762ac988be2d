package lsp

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"

	"go.lsp.dev/jsonrpc2"
)

// cancelRequestHandler serves $/cancelRequest ahead of the ordered queue,
// so it reaches a request that is already running, and cancels that
// request's context (the runner stops the model request in flight and
// sends nothing more).
//
// go.lsp.dev/protocol's CancelHandler is not used: it decodes the id into
// an interface and only accepts int32 or string, but JSON numbers decode as
// float64, so every numeric id (what VS Code sends) was refused.
func cancelRequestHandler(next jsonrpc2.Handler, canceller func(jsonrpc2.ID), log *slog.Logger) jsonrpc2.Handler {
	return func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
		if req.Method() != "$/cancelRequest" {
			return next(ctx, reply, req)
		}
		var params struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(req.Params(), &params); err != nil {
			log.Debug("malformed $/cancelRequest", "err", err)
			return reply(ctx, nil, nil)
		}
		if id, ok := requestID(params.ID); ok {
			canceller(id)
		}
		return reply(ctx, nil, nil)
	}
}

// requestID reads a JSON-RPC id: an integer that fits int32, or a string.
func requestID(raw json.RawMessage) (jsonrpc2.ID, bool) {
	var n float64
	if err := json.Unmarshal(raw, &n); err == nil {
		if n != math.Trunc(n) || n < math.MinInt32 || n > math.MaxInt32 {
			return jsonrpc2.ID{}, false
		}
		return jsonrpc2.NewNumberID(int32(n)), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return jsonrpc2.NewStringID(s), true
	}
	return jsonrpc2.ID{}, false
}
