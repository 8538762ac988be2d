package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// Options configure a Server. The zero value of every field is usable.
type Options struct {
	// Logger receives the server's log (stderr in production). Nil
	// discards it.
	Logger *slog.Logger
	// Getenv reads the environment: the state folder (KMX_HOME, XDG,
	// HOME) and the variables named by the settings' key variable names.
	Getenv func(string) string
	// Version is the kmx version reported in serverInfo and journals
	// ("dev" when empty).
	Version string
	// Parse replaces agentfile.Parse (tests use it to slow a parse down and
	// race document versions).
	Parse func(name string, src []byte) agentfile.Result
	// NewExecutor replaces the journaled Sessions executor of runs (tests
	// only; see runner.Options.NewExecutor).
	NewExecutor func(j *journal.Journal, p *invocation.Plan) (runner.Executor, func(), error)
	// ToolBinding is kmx lsp --tool-bindings, read at startup (nil: none):
	// the extension passes its machine-scoped kmx.toolBindings setting.
	ToolBinding *localtools.Binding
	// StartupRefusal is what kmx lsp refused before serving (a
	// --tool-bindings file that does not hold). The server still serves so
	// that initialize can answer it: the editor shows it once, with its
	// next step, instead of restarting a process that exits at once.
	StartupRefusal error
}

// Lifecycle states of a session, in the only order they can move.
type lifecycle int

const (
	stateUninitialized lifecycle = iota
	stateInitialized
	stateShutdown
)

// Exit codes Serve returns, as the LSP specification asks: 0 when exit
// follows shutdown, 1 otherwise (exit without shutdown, or the stream
// closed first).
const (
	ExitOK     = 0
	ExitNoShut = 1
)

// CodeServerNotInitialized is LSP's ServerNotInitialized (-32002).
const CodeServerNotInitialized = jsonrpc2.ServerNotInitialized

// Server is one language server session over one stream.
type Server struct {
	opts   Options
	log    *slog.Logger
	conn   jsonrpc2.Conn
	parse  func(string, []byte) agentfile.Result
	exited chan int

	// docs owns the open documents; handlers reach them only through it.
	docs *store
	work *workTracker

	// mu guards the session state below; handlers read and set it
	// through the methods after clientCapabilities, never directly.
	mu        sync.Mutex
	state     lifecycle
	settings  Settings
	clientCap clientCapabilities
}

// clientCapabilities is the part of the client's capabilities the server
// acts on.
type clientCapabilities struct {
	workDoneProgress bool
	// languageModels: the client serves the editor route's requests.
	languageModels bool
	// codeLensRefresh: the client takes workspace/codeLens/refresh, sent
	// when a run ends (the Replay and Re-grade lenses follow the journals).
	codeLensRefresh bool
}

// currentState returns the session's lifecycle state.
func (s *Server) currentState() lifecycle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// begin moves an uninitialized session to initialized with the client's
// capabilities and, when settings is not nil, its settings; false when the
// session was already initialized.
func (s *Server) begin(caps clientCapabilities, settings *Settings) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateUninitialized {
		return false
	}
	s.state = stateInitialized
	s.clientCap = caps
	if settings != nil {
		s.settings = *settings
	}
	return true
}

// end moves the session to shut down.
func (s *Server) end() {
	s.mu.Lock()
	s.state = stateShutdown
	s.mu.Unlock()
}

// capabilities returns what the client said it supports.
func (s *Server) capabilities() clientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientCap
}

// currentSettings returns a copy of the settings in force now.
func (s *Server) currentSettings() Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settings
}

// setSettings replaces the settings in force.
func (s *Server) setSettings(st Settings) {
	s.mu.Lock()
	s.settings = st
	s.mu.Unlock()
}

// Serve runs a language server on stream until the client sends exit, the
// stream closes or ctx ends, and returns the process exit code.
func Serve(ctx context.Context, stream jsonrpc2.Stream, opts Options) int {
	s := newServer(opts)
	return s.serve(ctx, stream)
}

func newServer(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Version == "" {
		// Journals record the version that wrote them; never leave it empty.
		opts.Version = "dev"
	}
	parse := opts.Parse
	if parse == nil {
		parse = agentfile.Parse
	}
	s := &Server{
		opts:   opts,
		log:    log,
		parse:  parse,
		exited: make(chan int, 1),
		work:   newWorkTracker(),
	}
	s.docs = newStore(s.parseDoc)
	return s
}

func (s *Server) serve(ctx context.Context, stream jsonrpc2.Stream) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.conn = jsonrpc2.NewConn(stream)
	s.conn.Go(ctx, s.handler())
	code := ExitNoShut
	select {
	case code = <-s.exited:
	case <-s.conn.Done():
		s.log.Info("stream closed before exit", "err", s.conn.Err())
	case <-ctx.Done():
	}
	// Stop work still in flight (its replies have nowhere to go) and close
	// the stream so the reader goroutine ends. A blocking stdin cannot be
	// interrupted by Close (only the client closing its end ends that
	// read), so the wait is bounded: the process exits right after anyway.
	cancel()
	_ = s.conn.Close()
	select {
	case <-s.conn.Done():
	case <-time.After(100 * time.Millisecond):
		s.log.Debug("the stream reader is still blocked; exiting without it")
	}
	return code
}

// handlerFunc handles one decoded method: params is the raw JSON params;
// the result is marshalled as the reply (ignored for notifications).
type handlerFunc func(ctx context.Context, params json.RawMessage) (any, error)

// methods is the dispatch table: the standard LSP methods kmx serves, each
// defined in its own file, and the custom methods of the contract
// (customMethods, generated from Methods()). Anything else is answered by
// nyi.
func (s *Server) methods() map[string]handlerFunc {
	table := map[string]handlerFunc{
		"initialize":                       s.initialize,
		"initialized":                      s.initialized,
		"shutdown":                         s.shutdown,
		"exit":                             s.exit,
		"textDocument/didOpen":             s.didOpen,
		"textDocument/didChange":           s.didChange,
		"textDocument/didClose":            s.didClose,
		"textDocument/didSave":             s.didSave,
		"textDocument/codeLens":            s.codeLens,
		"textDocument/codeAction":          s.codeAction,
		"workspace/didChangeConfiguration": s.didChangeConfiguration,
		"workspace/didChangeWatchedFiles":  s.didChangeWatchedFiles,
		"window/workDoneProgress/cancel":   s.workDoneProgressCancel,
		"$/setTrace":                       s.setTrace,
	}
	for method, h := range s.customMethods() {
		table[method] = h
	}
	return table
}

// handler is the cancel-aware, ordered, asynchronous handler chain, wired
// like buf's buflsp: $/cancelRequest is handled first so it reaches a
// request already running; every other message is started in arrival order
// on its own goroutine; the lifecycle gate and the dispatch table follow.
func (s *Server) handler() jsonrpc2.Handler {
	table := s.methods()
	inner, canceller := jsonrpc2.CancelHandler(asyncHandler(s.recoverHandler(s.lifecycleHandler(s.dispatch(table)))))
	return cancelRequestHandler(inner, canceller, s.log)
}

// dispatch decodes nothing itself: it finds the method's handler and
// replies with what it returns.
func (s *Server) dispatch(table map[string]handlerFunc) jsonrpc2.Handler {
	return func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
		h, ok := table[req.Method()]
		if !ok {
			return nyi(ctx, reply, req)
		}
		res, err := h(ctx, req.Params())
		if err != nil {
			s.log.Debug("request failed", "method", req.Method(), "err", err)
		}
		// A cancelled request is still answered (LSP asks for a reply, and
		// vscode-jsonrpc waits for one): the stream refuses writes under a
		// cancelled context, so the reply must not carry it.
		return reply(context.WithoutCancel(ctx), res, err)
	}
}

// lifecycleHandler enforces the LSP lifecycle: before initialize only
// initialize (and exit) are served; after shutdown only exit is.
func (s *Server) lifecycleHandler(next jsonrpc2.Handler) jsonrpc2.Handler {
	return func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
		method := req.Method()
		_, isCall := req.(*jsonrpc2.Call)
		st := s.currentState()
		switch {
		case method == "exit":
			return next(ctx, reply, req)
		case st == stateUninitialized && method != "initialize":
			if !isCall {
				// Notifications before initialize are dropped, as the
				// specification asks.
				return reply(ctx, nil, nil)
			}
			return reply(ctx, nil, jsonrpc2.Errorf(jsonrpc2.ServerNotInitialized,
				"%s: the server is not initialized; send initialize first", method))
		case st == stateShutdown:
			return reply(ctx, nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest,
				"%s: the server is shut down; only exit is accepted", method))
		}
		return next(ctx, reply, req)
	}
}

// recoverHandler answers a panicking handler with an internal error instead
// of crashing the sidecar: a broken invariant is reported, not fatal.
func (s *Server) recoverHandler(next jsonrpc2.Handler) jsonrpc2.Handler {
	return func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) (err error) {
		replied := false
		guarded := func(ctx context.Context, result any, rerr error) error {
			replied = true
			return reply(ctx, result, rerr)
		}
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("handler panicked; this is a kmx bug", "method", req.Method(), "panic", fmt.Sprint(p))
				if !replied {
					err = reply(ctx, nil, jsonrpc2.Errorf(jsonrpc2.InternalError,
						"%s: internal error in kmx (a bug; see the kmx output channel)", req.Method()))
				}
			}
		}()
		return next(ctx, guarded, req)
	}
}

// invalidParams wraps a params decoding problem as InvalidParams.
func invalidParams(method string, err error) error {
	return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: invalid params: %v", method, err)
}

// decode unmarshals params strictly enough to catch a wrong shape: a
// missing or null params object is refused for methods that need one.
func decode(method string, raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return invalidParams(method, errors.New("params are required"))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidParams(method, err)
	}
	return nil
}

// notify sends a notification to the client, logging (not failing) when
// the stream is gone.
func (s *Server) notify(ctx context.Context, method string, params any) {
	if err := s.conn.Notify(context.WithoutCancel(ctx), method, params); err != nil {
		s.log.Debug("notify failed", "method", method, "err", err)
	}
}
