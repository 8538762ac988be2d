package sessions

import (
	"context"
	"errors"
	"sync"
)

// maxIdleStreams caps the streams a pool keeps open between uses: one per
// turn in flight at the largest --concurrency.
const maxIdleStreams = 32

// errPoolClosed is get's error once the pool is closed.
var errPoolClosed = errors.New("the service is closed")

// streamPool keeps gRPC streams of type S open between uses: Execute
// streams between a worker's requests (Embedded.Execute) and harness Turn
// streams between turns (openTurn). Opening a stream on an in-memory
// connection costs several times what its messages on an open one do
// (headers, stream and context setup, trailers, teardown).
//
// A stream goes back to the pool only after a use that ended cleanly (its
// user says so); every other stream is cancelled, exactly as a stream of
// its own would be. A pooled stream's context is the pool's, never a
// request's or a turn's: its user tears it down when its own context ends
// (context.AfterFunc) and carries its deadline in the request.
type streamPool[S any] struct {
	open func(context.Context) (S, error)
	// base is the parent of every stream's context; close cancels it.
	base   context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	idle   []*pooled[S]
	closed bool
	opened int // streams opened so far (tests read it)
}

// pooled is one stream and the cancel of its own context.
type pooled[S any] struct {
	stream S
	cancel context.CancelFunc
}

// newStreamPool makes a pool whose streams open is called to open.
func newStreamPool[S any](open func(context.Context) (S, error)) *streamPool[S] {
	base, cancel := context.WithCancel(context.Background())
	return &streamPool[S]{open: open, base: base, cancel: cancel}
}

// get returns an idle stream, or opens one.
func (p *streamPool[S]) get() (*pooled[S], error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		ps := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return ps, nil
	}
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	p.opened++
	p.mu.Unlock()
	ctx, cancel := context.WithCancel(p.base)
	stream, err := p.open(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &pooled[S]{stream: stream, cancel: cancel}, nil
}

// put keeps a stream whose use ended cleanly for the next one, or cancels
// it when the pool is full or closed.
func (p *streamPool[S]) put(ps *pooled[S]) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < maxIdleStreams {
		p.idle = append(p.idle, ps)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	ps.cancel()
}

// close cancels every stream (idle ones included: their servers' handlers
// return) and makes put cancel any stream still returned.
func (p *streamPool[S]) close() {
	p.mu.Lock()
	p.closed = true
	p.idle = nil
	p.mu.Unlock()
	p.cancel()
}

// idleStreams is the number of streams waiting in the pool.
func (p *streamPool[S]) idleStreams() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// openedStreams is how many streams the pool has opened.
func (p *streamPool[S]) openedStreams() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opened
}
