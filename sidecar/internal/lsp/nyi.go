package lsp

import (
	"context"
	"strings"

	"go.lsp.dev/jsonrpc2"
)

// nyi answers every method kmx does not implement. A request gets
// MethodNotFound naming the method; a notification is ignored (the
// specification lets a server drop notifications it does not know, and
// "$/" ones explicitly).
func nyi(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
	if _, isCall := req.(*jsonrpc2.Call); !isCall {
		return reply(ctx, nil, nil)
	}
	msg := "%s: not implemented by kmx lsp"
	if strings.HasPrefix(req.Method(), "kmx/") {
		msg = "%s: not a kmx method; see docs/protocol.md for the methods this server offers"
	}
	return reply(ctx, nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, msg, req.Method()))
}
