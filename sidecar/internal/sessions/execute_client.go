package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// ErrExecuteEnded is Execute's error when the service ended a stream
// before the request's turn ended.
var ErrExecuteEnded = errors.New("the service ended the call before the turn ended")

// execStream is the client side of an Execute stream.
type execStream = grpc.BidiStreamingClient[sessionspb.ExecuteRequest, sessionspb.ExecuteEvent]

// Execute runs req on the service (see the Execute contract) and calls
// each with its events, in order, up to the request's last one: its
// verification, or the end of a turn that did not complete. ctx is the
// request's: its deadline goes with req (Execute sets
// req.DeadlineUnixNano), and when it ends the stream is torn down, which
// cancels the turn exactly as ending a call of its own would. An error from
// each stops Execute with that error. The stream is kept for the next
// request only when this one ended cleanly and ctx had not ended by then;
// every other stream is torn down, so a cancelled or failed request never
// shares a stream with a later one (see streamPool).
func (e *Embedded) Execute(ctx context.Context, req *sessionspb.ExecuteRequest, each func(*sessionspb.ExecuteEvent) error) error {
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	es, err := e.execs.get()
	if err != nil {
		return fmt.Errorf("execute: open a stream: %w", err)
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
