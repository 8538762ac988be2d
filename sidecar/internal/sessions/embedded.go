package sessions

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// bufSize is the in-memory pipe buffer per direction. It does not cap a
// message (a full pipe makes the writer wait for the reader); each dial
// allocates it and a run writes all of it (the pipe is a ring), so it
// stays small: two HTTP/2 frames. At 256 KiB the four pipes of a run were
// 1 MiB of its live heap.
const bufSize = 32 << 10

// Transport settings of the two in-memory connections (see serverOptions).
const (
	// windowSize is each stream's and each connection's flow-control
	// window. Setting it makes the window static, which switches off the
	// BDP estimator: without it every burst of data frames on an idle
	// connection costs a ping and its ack (two more frames, two more
	// hand-offs between the reader and writer goroutines), to size a window
	// that an in-memory pipe does not need. 1 MiB holds any turn's message.
	windowSize = 1 << 20
	// streamWorkers serve each server's streams on long-lived goroutines
	// whose stacks are already grown, instead of one new goroutine per
	// stream that grows its stack again; a stream that finds them all busy
	// gets its own goroutine as before.
	streamWorkers = 8
)

// serverOptions are the options of both embedded servers. extra follows them.
func serverOptions(extra ...grpc.ServerOption) []grpc.ServerOption {
	return append([]grpc.ServerOption{
		grpc.StaticStreamWindowSize(windowSize),
		grpc.StaticConnWindowSize(windowSize),
		grpc.NumStreamWorkers(streamWorkers),
	}, extra...)
}

// Options configures an embedded Sessions service.
type Options struct {
	// Journal is the run's journal; every session and turn is written there.
	Journal *journal.Journal
	// Resolve gives the chat harness its live models. Replay never uses it.
	Resolve harness.Resolver
	// LiveTools answers the calls of live-bound tools (nil: none are
	// bound). Replay never uses it.
	LiveTools harness.LiveTools
	// Workspaces holds the scratch copies of the run's examples with a
	// fixture workspace (nil: none). Replay never uses it.
	Workspaces harness.Workspaces
}

// Embedded is a Sessions service and its chat harness, each served on its
// own in-memory gRPC listener inside this process.
type Embedded struct {
	harnessSrv   *grpc.Server
	sessionsSrv  *grpc.Server
	harnessConn  *grpc.ClientConn
	sessionsConn *grpc.ClientConn
	client       sessionspb.SessionsClient
	execs        *streamPool[execStream]
	svc          *service
	serving      sync.WaitGroup
	closeOnce    sync.Once
}

// Start serves the chat harness and the Sessions service on two bufconn
// listeners and connects a Sessions client to them. Close stops both.
func Start(ctx context.Context, opts Options) (*Embedded, error) {
	return start(ctx, opts, nil)
}

// start is Start; wrap, if not nil, wraps the Sessions service's harness
// client (tests watch the streams Sessions opens through it).
func start(ctx context.Context, opts Options, wrap func(sessionspb.HarnessClient) sessionspb.HarnessClient) (*Embedded, error) {
	if opts.Journal == nil {
		return nil, errors.New("start sessions: no journal: open the run's journal first")
	}
	if opts.Resolve == nil {
		return nil, errors.New("start sessions: no model resolver")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start sessions: %w", err)
	}
	e := &Embedded{}

	harnessLis := bufconn.Listen(bufSize)
	// WaitForHandlers: Close returns only after every harness turn has
	// returned, that is after each model call in flight has been torn down,
	// so a cancelled caller that closes the service has joined its provider.
	e.harnessSrv = grpc.NewServer(serverOptions(grpc.WaitForHandlers(true))...)
	sessionspb.RegisterHarnessServer(e.harnessSrv, harness.NewWithWorkspaces(opts.Resolve, opts.LiveTools, opts.Workspaces))
	e.serve(e.harnessSrv, harnessLis)
	hc, err := dialBuf(harnessLis)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("start sessions: connect to the chat harness: %w", err)
	}
	e.harnessConn = hc

	sessionsLis := bufconn.Listen(bufSize)
	// WaitForHandlers: Close returns only after every RunTurn has written
	// its terminal record, so the caller may Finish the journal right after.
	e.sessionsSrv = grpc.NewServer(serverOptions(grpc.WaitForHandlers(true))...)
	hcl := sessionspb.NewHarnessClient(hc)
	if wrap != nil {
		hcl = wrap(hcl)
	}
	e.svc = newService(opts.Journal, hcl)
	sessionspb.RegisterSessionsServer(e.sessionsSrv, e.svc)
	e.serve(e.sessionsSrv, sessionsLis)
	sc, err := dialBuf(sessionsLis)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("start sessions: connect to the sessions service: %w", err)
	}
	e.sessionsConn = sc
	e.client = sessionspb.NewSessionsClient(sc)
	e.execs = newStreamPool(func(ctx context.Context) (execStream, error) { return e.client.Execute(ctx) })
	return e, nil
}

// Client returns the Sessions client connected to this service.
func (e *Embedded) Client() sessionspb.SessionsClient { return e.client }

// Close stops both services and their connections. Turns still running are
// cancelled (their model calls stop) and Close waits until each has
// journaled its cancelled terminal. Calling Close again does nothing.
func (e *Embedded) Close() {
	e.closeOnce.Do(func() {
		if e.execs != nil {
			e.execs.close()
		}
		if e.sessionsConn != nil {
			_ = e.sessionsConn.Close()
		}
		if e.sessionsSrv != nil {
			e.sessionsSrv.Stop()
		}
		if e.svc != nil {
			// No Sessions handler runs any more: cancel the harness
			// streams kept between turns, so their handlers return too.
			e.svc.close()
		}
		if e.harnessConn != nil {
			_ = e.harnessConn.Close()
		}
		if e.harnessSrv != nil {
			e.harnessSrv.Stop()
		}
		e.serving.Wait()
	})
}

func (e *Embedded) serve(srv *grpc.Server, lis *bufconn.Listener) {
	e.serving.Add(1)
	go func() {
		defer e.serving.Done()
		// Serve returns when Stop closes the listener; there is no other
		// way for an in-memory listener to fail.
		_ = srv.Serve(lis)
	}()
}

// dialBuf connects to an in-memory listener. passthrough:/// keeps the
// target from ever being resolved as a network name.
func dialBuf(lis *bufconn.Listener) (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStaticStreamWindowSize(windowSize),
		grpc.WithStaticConnWindowSize(windowSize))
}
