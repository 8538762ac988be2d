package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/sessions/sessionspb"
)

// maxIdleExecStreams caps the Execute streams kept open between requests:
// one per example in flight at the highest concurrency.
const maxIdleExecStreams = 32

// ErrExecuteEnded is Execute's error when the service ended a stream
// before the request's turn ended.
var ErrExecuteEnded = errors.New("the service ended the call before the turn ended")

// execStream is an open Execute stream and the cancel that tears it down.
type execStream struct {
	stream grpc.BidiStreamingClient[sessionspb.ExecuteRequest, sessionspb.ExecuteEvent]
	cancel context.CancelFunc
}

// execStreams are the idle Execute streams of an Embedded service. Opening
// a stream costs several times what a request on an open one does, so a
// stream whose last request ended cleanly carries the next one.
type execStreams struct {
	mu     sync.Mutex
	idle   []*execStream
	closed bool
	opened int // streams opened so far (tests read it)
}

// Execute runs req on the service (see the Execute contract) and calls
// each with its events, in order, up to the request's last one: its
// verification, or the end of a turn that did not complete. ctx is the
// request's: its deadline goes with req (Execute sets
// req.DeadlineUnixNano), and when it ends the stream is torn down, which
// cancels the turn exactly as ending a call of its own would. An error from
// each stops Execute with that error. The stream is kept for the next
// request only when this one ended cleanly and ctx had not ended by then;
// every other stream is torn down, so a cancelled or failed request never
// shares a stream with a later one.
func (e *Embedded) Execute(ctx context.Context, req *sessionspb.ExecuteRequest, each func(*sessionspb.ExecuteEvent) error) error {
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	es, err := e.execs.take(e.client)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, es.cancel)
	clean := false
	defer func() {
		if stop() && clean {
			e.execs.put(es)
			return
		}
		es.cancel()
	}()
	if d, ok := ctx.Deadline(); ok {
		req.DeadlineUnixNano = d.UnixNano()
	}
	// A stream that broke says why on Recv; Send reports only io.EOF then.
	if err := es.stream.Send(req); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	for {
		ev, err := es.stream.Recv()
		if errors.Is(err, io.EOF) {
			return ErrExecuteEnded
		}
		if err != nil {
			return err
		}
		if err := each(ev); err != nil {
			return err
		}
		switch x := ev.GetEvent().(type) {
		case *sessionspb.ExecuteEvent_Verified:
			clean = true
			return nil
		case *sessionspb.ExecuteEvent_Turn:
			if x.Turn.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
				clean = true
				return nil
			}
		}
	}
}

// take returns an idle stream, or opens one whose context is its own (not
// a request's: the stream outlives each request).
func (x *execStreams) take(c sessionspb.SessionsClient) (*execStream, error) {
	x.mu.Lock()
	if n := len(x.idle); n > 0 {
		es := x.idle[n-1]
		x.idle = x.idle[:n-1]
		x.mu.Unlock()
		return es, nil
	}
	closed := x.closed
	if !closed {
		x.opened++
	}
	x.mu.Unlock()
	if closed {
		return nil, errors.New("execute: the sessions service is closed")
	}
	sctx, cancel := context.WithCancel(context.Background())
	st, err := c.Execute(sctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("execute: open a stream: %w", err)
	}
	return &execStream{stream: st, cancel: cancel}, nil
}

// openedStreams is how many streams take has opened.
func (x *execStreams) openedStreams() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.opened
}

// put keeps es for the next request, unless the service is closing or
// enough streams are idle already.
func (x *execStreams) put(es *execStream) {
	x.mu.Lock()
	if x.closed || len(x.idle) >= maxIdleExecStreams {
		x.mu.Unlock()
		es.cancel()
		return
	}
	x.idle = append(x.idle, es)
	x.mu.Unlock()
}

// close tears down every idle stream; streams in use are torn down when
// their request ends.
func (x *execStreams) close() {
	x.mu.Lock()
	idle := x.idle
	x.idle, x.closed = nil, true
	x.mu.Unlock()
	for _, es := range idle {
		es.cancel()
	}
}
