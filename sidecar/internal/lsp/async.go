package lsp

import (
	"context"
	"sync"

	"go.lsp.dev/jsonrpc2"
)

// releaseKey finds, in a handler's context, the function that lets the next
// message start before this one has replied.
type releaseKey struct{}

// asyncHandler is jsonrpc2.AsyncHandler with one addition: a handler may
// release the queue early (see release). Messages start in arrival order,
// each on its own goroutine, and each waits for the one before it to reply
// (or release), so didOpen/didChange are applied in order. Long work (a run
// or a test) releases right after taking its snapshot, so typing, lenses
// and $/cancelRequest keep flowing while it runs.
//
// The returned handler must be called from a single goroutine, as
// jsonrpc2.Conn does.
func asyncHandler(handler jsonrpc2.Handler) jsonrpc2.Handler {
	next := make(chan struct{})
	close(next)
	return func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
		wait := next
		unlock := make(chan struct{})
		next = unlock
		var once sync.Once
		rel := func() { once.Do(func() { close(unlock) }) }
		inner := reply
		reply = func(ctx context.Context, result any, err error) error {
			rel()
			return inner(ctx, result, err)
		}
		ctx = context.WithValue(ctx, releaseKey{}, rel)
		go func() {
			<-wait
			_ = handler(ctx, reply, req)
		}()
		return nil
	}
}

// release lets the next message start now, before this handler replies.
// It is safe to call more than once and outside asyncHandler (a no-op).
func release(ctx context.Context) {
	if rel, ok := ctx.Value(releaseKey{}).(func()); ok {
		rel()
	}
}
