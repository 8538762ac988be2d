package sessions

import (
	"context"
	"sync"

	"github.com/kmxdev/kmx/sidecar/internal/sessions/sessionspb"
)

// maxIdleStreams caps the harness streams kept open between turns: the
// most turns a run has in flight at once (the largest --concurrency).
const maxIdleStreams = 32

// streamPool keeps harness Turn streams open between turns. Opening a
// stream on the in-memory connection costs several times what a turn's
// messages on an open one do (headers, stream and context setup, trailers,
// teardown), so a turn takes an idle stream when there is one.
//
// A stream returns to the pool only after a unit of work that ended cleanly
// (turnStream.close says which); every other stream is cancelled, exactly as
// a stream of its own would be. A pooled stream's context is the pool's,
// never a turn's: a turn tears its stream down through context.AfterFunc
// (openTurn), and the harness bounds the turn by the deadline in its
// request.
type streamPool struct {
	harness sessionspb.HarnessClient
	// base is the parent of every stream's context; close cancels it.
	base   context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	idle   []*pooledStream
	closed bool
}

// pooledStream is one harness stream and the cancel of its own context.
type pooledStream struct {
	stream harnessStream
	cancel context.CancelFunc
}

func newStreamPool(h sessionspb.HarnessClient) *streamPool {
	base, cancel := context.WithCancel(context.Background())
	return &streamPool{harness: h, base: base, cancel: cancel}
}

// get returns an idle stream, or opens one.
func (p *streamPool) get() (*pooledStream, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		ps := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return ps, nil
	}
	p.mu.Unlock()
	ctx, cancel := context.WithCancel(p.base)
	stream, err := p.harness.Turn(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &pooledStream{stream: stream, cancel: cancel}, nil
}

// put keeps a stream whose unit of work ended cleanly for the next turn, or
// cancels it when the pool is full or closed.
func (p *streamPool) put(ps *pooledStream) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < maxIdleStreams {
		p.idle = append(p.idle, ps)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	ps.cancel()
}

// close cancels every stream (idle ones included: their harness handlers
// return) and makes put cancel any stream still returned.
func (p *streamPool) close() {
	p.mu.Lock()
	p.closed = true
	p.idle = nil
	p.mu.Unlock()
	p.cancel()
}

// idleStreams is the number of streams waiting in the pool.
func (p *streamPool) idleStreams() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
