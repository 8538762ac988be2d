package lsp

import (
	"context"
	"encoding/json"
)

// typed adapts a custom method's one handler to the dispatch table: it
// decodes the params into the contract's type P and answers the handler's
// result. The table (methods_gen.go) is generated from Methods() with P and
// R spelled out, so a handler whose signature drifts from the contract does
// not compile. Absent or null params are refused (LSP's "params are
// required"), or taken as the zero P where Methods() says they are optional.
func typed[P, R any](method string, optional bool, fn func(context.Context, P) (*R, error)) handlerFunc {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p P
		if !optional || (len(raw) > 0 && string(raw) != "null") {
			if err := decode(method, raw, &p); err != nil {
				return nil, err
			}
		}
		res, err := fn(ctx, p)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
}
