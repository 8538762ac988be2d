package lsp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

// waitFor bounds every wait in these tests: long enough for a loaded CI
// machine, short enough that a hang fails instead of timing out the run.
const waitFor = 20 * time.Second

// message is one message the client received from the server (a
// notification or a server→client request), or that the driver sent.
type message struct {
	Method string
	Params json.RawMessage
}

// client is a real jsonrpc2 client connected to an in-process server over
// net.Pipe.
type client struct {
	t    testing.TB
	conn jsonrpc2.Conn
	code chan int

	mu       sync.Mutex
	received []message
	signal   chan struct{}
	// answer, when set, answers the server's kmx/languageModel/* requests
	// (the extension's side of the editor route), each on its own
	// goroutine so it may block until it is cancelled.
	// id is the request's JSON-RPC id as JSON.
	answer func(ctx context.Context, id, method string, params json.RawMessage) (any, error)
}

// startServer runs lsp.Serve on one end of a pipe and returns a client on
// the other. KMX_HOME is a private temporary folder unless opts.Getenv is
// set.
func startServer(t testing.TB, opts lsp.Options) *client {
	t.Helper()
	if opts.Getenv == nil {
		home := privateHome(t)
		opts.Getenv = func(k string) string {
			if k == "KMX_HOME" {
				return home
			}
			return ""
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	srvEnd, cliEnd := net.Pipe()
	c := &client{t: t, code: make(chan int, 1), signal: make(chan struct{}, 1)}
	go func() { c.code <- lsp.Serve(ctx, jsonrpc2.NewStream(srvEnd), opts) }()
	c.conn = jsonrpc2.NewConn(jsonrpc2.NewStream(cliEnd))
	c.conn.Go(ctx, c.handle)
	t.Cleanup(func() {
		cancel()
		_ = c.conn.Close()
		select {
		case <-c.code:
		case <-time.After(waitFor):
			t.Error("server did not stop after its context ended")
		}
	})
	return c
}

func privateHome(t testing.TB) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "kmx-home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return home
}

// handle records what the server sends and answers its requests
// (window/workDoneProgress/create) with success, as VS Code does.
func (c *client) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
	c.mu.Lock()
	c.received = append(c.received, message{Method: req.Method(), Params: append(json.RawMessage(nil), req.Params()...)})
	answer := c.answer
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
	if call, isCall := req.(*jsonrpc2.Call); isCall && answer != nil && strings.HasPrefix(req.Method(), "kmx/languageModel/") {
		params := append(json.RawMessage(nil), req.Params()...)
		callID := call.ID()
		idJSON, _ := json.Marshal(&callID)
		go func() {
			res, err := answer(ctx, string(idJSON), req.Method(), params)
			_ = reply(ctx, res, err)
		}()
		return nil
	}
	return reply(ctx, nil, nil)
}

func (c *client) call(method string, params, result any) error {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err := c.conn.Call(ctx, method, params, result)
	return err
}

func (c *client) mustCall(method string, params, result any) {
	c.t.Helper()
	if err := c.call(method, params, result); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	if err := c.conn.Notify(context.Background(), method, params); err != nil {
		c.t.Fatalf("notify %s: %v", method, err)
	}
}

// initialize runs the handshake with the given initializationOptions.
func (c *client) initialize(initOpts any) map[string]any {
	c.t.Helper()
	var res map[string]any
	c.mustCall("initialize", map[string]any{
		"processId":             nil,
		"rootUri":               nil,
		"capabilities":          map[string]any{"window": map[string]any{"workDoneProgress": true}},
		"initializationOptions": initOpts,
	}, &res)
	c.notify("initialized", map[string]any{})
	return res
}

// waitMessage waits for the first received message (from index from on)
// with the method that match accepts, and returns it and its index.
func (c *client) waitMessage(from int, method string, match func(json.RawMessage) bool) (message, int) {
	c.t.Helper()
	deadline := time.After(waitFor)
	for {
		c.mu.Lock()
		for i := from; i < len(c.received); i++ {
			m := c.received[i]
			if m.Method == method && (match == nil || match(m.Params)) {
				c.mu.Unlock()
				return m, i
			}
		}
		c.mu.Unlock()
		select {
		case <-c.signal:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			c.t.Fatalf("no %s arrived within %s; got %s", method, waitFor, c.methods())
		}
	}
}

func (c *client) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.received)
}

func (c *client) all() []message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]message(nil), c.received...)
}

func (c *client) methods() string {
	var names []string
	for _, m := range c.all() {
		names = append(names, m.Method)
	}
	return strings.Join(names, ", ")
}

// diagnosticsFor waits for a publishDiagnostics for uri at version.
func (c *client) diagnosticsFor(from int, uri string, version int32) (publishedDiagnostics, int) {
	c.t.Helper()
	var got publishedDiagnostics
	m, i := c.waitMessage(from, "textDocument/publishDiagnostics", func(raw json.RawMessage) bool {
		var p publishedDiagnostics
		return json.Unmarshal(raw, &p) == nil && p.URI == uri && p.Version != nil && *p.Version == version
	})
	if err := json.Unmarshal(m.Params, &got); err != nil {
		c.t.Fatal(err)
	}
	return got, i
}

type publishedDiagnostics struct {
	URI         string  `json:"uri"`
	Version     *int32  `json:"version"`
	Diagnostics []diagJ `json:"diagnostics"`
}

type diagJ struct {
	Range    rangeJ `json:"range"`
	Severity int    `json:"severity"`
	Code     string `json:"code"`
	Source   string `json:"source"`
	Message  string `json:"message"`
}

type rangeJ struct {
	Start posJ `json:"start"`
	End   posJ `json:"end"`
}

type posJ struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// rpcCode returns the JSON-RPC error code of err, or 0.
func rpcCode(err error) jsonrpc2.Code {
	var e *jsonrpc2.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// fileURI is the file:// URI of an absolute path.
func fileURI(path string) string {
	return "file://" + filepath.ToSlash(path)
}

// writeAgent writes an agent file into a fresh folder and returns its path.
func writeAgent(t *testing.T, name, text string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (c *client) open(uri string, version int32, text string) {
	c.t.Helper()
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": uri, "languageId": "markdown", "version": version, "text": text,
	}})
}

// lensJ is a code lens as the client receives it.
type lensJ struct {
	Range   rangeJ `json:"range"`
	Command *struct {
		Title     string            `json:"title"`
		Command   string            `json:"command"`
		Arguments []json.RawMessage `json:"arguments"`
	} `json:"command"`
}

// lenses asks for the code lenses of uri.
func (c *client) lenses(uri string) []lensJ {
	c.t.Helper()
	var out []lensJ
	c.mustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": uri}}, &out)
	return out
}

// cancellableCall makes a request the way vscode-jsonrpc does: when ctx
// ends before the reply, it sends $/cancelRequest with the request's ID
// (a JSON number here), then waits for the reply the server still owes.
func cancellableCall(ctx context.Context, conn jsonrpc2.Conn, method string, params, result any) error {
	id, err := conn.Call(ctx, method, params, result)
	if ctx.Err() != nil {
		_ = conn.Notify(context.WithoutCancel(ctx), "$/cancelRequest", map[string]any{"id": &id})
	}
	return err
}
