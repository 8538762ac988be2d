//go:build kmxtest

package ghread

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const repo = "octo-org/Hello-World"

// repoURL is the repository_url GitHub gives items of repo.
const repoURL = "https://api.github.com/repos/" + repo

// token is the fixture credential (not credential-shaped: it is found by
// its exact value).
const token = "fixture-credential-value-4242"

var searchSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"query":   map[string]any{"type": "string"},
		"owner":   map[string]any{"type": "string"},
		"repo":    map[string]any{"type": "string"},
		"page":    map[string]any{"type": "number"},
		"perPage": map[string]any{"type": "number"},
	},
	"required": []string{"query"},
}

// fixture imitates the read-only server's search_pull_requests over TLS on
// 127.0.0.1 with the go-sdk server, reached through the test-only endpoint
// override (endpoint_override.go) exactly as a test build of kmx reaches
// it. It counts tool calls and logs every HTTP request.
type fixture struct {
	srv   *httptest.Server
	calls atomic.Int32
	args  atomic.Value // map[string]any
	auth  atomic.Value // string

	mu   sync.Mutex
	log  []string        // "METHOD /path jsonrpc-method"
	init json.RawMessage // the initialize request's params
}

func item(n int, title, repoURL string, mergedAt any) map[string]any {
	it := map[string]any{"number": n, "title": title, "repository_url": repoURL, "state": "closed",
		"body": "secret body", "user": map[string]any{"login": "someone"}}
	if mergedAt != nil {
		it["pull_request"] = map[string]any{"merged_at": mergedAt, "url": "https://api.github.com/x"}
	} else {
		it["pull_request"] = map[string]any{"url": "https://api.github.com/x"}
	}
	return it
}

func searchJSON(incomplete bool, items ...map[string]any) string {
	b, _ := json.Marshal(map[string]any{"total_count": len(items), "incomplete_results": incomplete, "items": items})
	return string(b)
}

type fixtureOpts struct {
	answer     string
	schema     map[string]any
	jsonReply  bool
	wrap       func(http.Handler) http.Handler
	slow       bool
	isError    bool
	extraBytes int
	// ask makes the tool ask the client for roots, sampling and
	// elicitation first, recording what each request got.
	ask *asked
}

// asked records the answers to the fixture's requests to the client.
type asked struct{ roots, sampling, elicitation error }

// newFixture starts the fixture and points this test's reads at it: the
// override variables are set for the test (so fixture tests never run in
// parallel).
func newFixture(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	f := &fixture{}
	release := make(chan struct{})
	server := mcp.NewServer(&mcp.Implementation{Name: "github-mcp-fixture", Version: "1"}, nil)
	schema := o.schema
	if schema == nil {
		schema = searchSchema
	}
	server.AddTool(&mcp.Tool{Name: RemoteTool, Description: "Search pull requests", InputSchema: schema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.calls.Add(1)
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			f.args.Store(args)
			if o.ask != nil {
				// The features are deprecated, but a 2025-11-25 server may
				// still ask for them: the client must refuse.
				//lint:ignore SA1019 the test is that the client refuses these
				_, o.ask.roots = req.Session.ListRoots(ctx, nil)
				//lint:ignore SA1019 the test is that the client refuses these
				_, o.ask.sampling = req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
				_, o.ask.elicitation = req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "token?", RequestedSchema: map[string]any{"type": "object"}})
			}
			if o.slow {
				select {
				case <-ctx.Done():
				case <-release:
				}
				return nil, errors.New("too late")
			}
			text := o.answer
			if o.extraBytes > 0 {
				text = searchJSON(false, item(1, strings.Repeat("x", o.extraBytes), repoURL, "2026-01-01T00:00:00Z"))
			}
			return &mcp.CallToolResult{IsError: o.isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{JSONResponse: o.jsonReply})
	if o.wrap != nil {
		h = o.wrap(h)
	}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.auth.Store(r.Header.Get("Authorization"))
		f.record(r)
		h.ServeHTTP(w, r)
	}))
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: frees a slow handler

	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(TestEndpointEnv, f.srv.URL+"/mcp/readonly")
	t.Setenv(TestCAEnv, ca)
	return f
}

// record logs a request with the JSON-RPC method of a POST body.
func (f *fixture) record(r *http.Request) {
	entry := r.Method + " " + r.URL.Path
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var msg struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(b, &msg) == nil && msg.Method != "" {
			entry += " " + msg.Method
			if msg.Method == "initialize" {
				f.mu.Lock()
				f.init = msg.Params
				f.mu.Unlock()
			}
		}
	}
	f.mu.Lock()
	f.log = append(f.log, entry)
	f.mu.Unlock()
}

// initParams is the initialize request's params.
func (f *fixture) initParams() json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.init
}

func (f *fixture) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func config() Config { return Config{Repository: repo, Token: token} }
