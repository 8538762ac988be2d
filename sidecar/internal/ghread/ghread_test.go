package ghread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const repo = "octo-org/Hello-World"

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
// 127.0.0.1 with the go-sdk server. It counts calls and records the last
// arguments and bearer header.
type fixture struct {
	srv      *httptest.Server
	calls    atomic.Int32
	requests atomic.Int32
	args     atomic.Value // map[string]any
	auth     atomic.Value // string
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

func search(incomplete bool, items ...map[string]any) string {
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
}

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
			if o.slow {
				select {
				case <-ctx.Done():
				case <-release:
				}
				return nil, errors.New("too late")
			}
			text := o.answer
			if o.extraBytes > 0 {
				text = search(false, item(1, strings.Repeat("x", o.extraBytes), "https://api.github.com/repos/"+repo, "2026-01-01T00:00:00Z"))
			}
			return &mcp.CallToolResult{IsError: o.isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{JSONResponse: o.jsonReply})
	if o.wrap != nil {
		h = o.wrap(h)
	}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		f.auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: frees a slow handler
	return f
}

func (f *fixture) config() Config {
	return Config{Repository: repo, Token: token, endpoint: f.srv.URL + "/mcp/readonly", transport: f.srv.Client().Transport}
}

func TestReadProjectsMergedPullRequests(t *testing.T) {
	url := "https://api.github.com/repos/" + repo
	f := newFixture(t, fixtureOpts{answer: search(false,
		item(7, "Add the tool harness", url, "2026-11-30T10:00:00Z"),
		item(8, "Unmerged change", url, nil),
		item(9, "Other repository", "https://api.github.com/repos/octo-org/Other", "2026-11-30T10:00:00Z"),
		item(10, "Other letter case", "https://api.github.com/repos/Octo-Org/hello-world", "2026-11-30T10:00:00Z"),
		item(11, "Null merged_at", url, json.RawMessage("null")),
		item(12, "Fix the journal", url, "2026-11-29T09:00:00Z"),
	)})
	got, err := Read(context.Background(), f.config())
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	want := `{"repository":"octo-org/Hello-World","pullRequests":[{"number":7,"title":"Add the tool harness"},{"number":12,"title":"Fix the journal"}]}`
	if got != want {
		t.Fatalf("projection\n got %s\nwant %s", got, want)
	}
	if f.calls.Load() != 1 {
		t.Errorf("search_pull_requests called %d times, want 1", f.calls.Load())
	}
	args, _ := f.args.Load().(map[string]any)
	if args["query"] != "repo:"+repo+" is:pr is:merged" || args["page"] != float64(1) || args["perPage"] != float64(20) || len(args) != 3 {
		t.Errorf("arguments = %v", args)
	}
	if a, _ := f.auth.Load().(string); a != "Bearer "+token {
		t.Errorf("the credential was not sent as the bearer header")
	}
}

func TestReadRefuses(t *testing.T) {
	url := "https://api.github.com/repos/" + repo
	merged := item(7, "Fine", url, "2026-11-30T10:00:00Z")
	tests := []struct {
		name string
		o    fixtureOpts
		want string
	}{
		{"incomplete results", fixtureOpts{answer: search(true, merged)}, "incomplete"},
		{"no incomplete_results", fixtureOpts{answer: `{"total_count":1,"items":[]}`}, "lacks incomplete_results"},
		{"not JSON", fixtureOpts{answer: "no results"}, "not the search JSON"},
		{"tool error", fixtureOpts{answer: "boom", isError: true}, "answered with an error"},
		{"title holds the credential", fixtureOpts{answer: search(false, item(7, "leak "+token, url, "2026-11-30T10:00:00Z"))}, "holds the configured credential"},
		{"title holds a credential shape", fixtureOpts{answer: search(false, item(7, "gh"+"p_"+strings.Repeat("Ab1", 12), url, "2026-11-30T10:00:00Z"))}, "credential-shaped"},
		{"schema change", fixtureOpts{answer: search(false, merged), schema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}, "input schema changed"},
		{"2 MiB reply as JSON", fixtureOpts{jsonReply: true, extraBytes: 2 << 20}, "over 1 MiB"},
		{"oversized SSE event", fixtureOpts{extraBytes: 2 * MaxEventBytes}, "calling search_pull_requests failed"},
		{"401", fixtureOpts{wrap: func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "bad credentials", http.StatusUnauthorized)
			})
		}}, "refused the credential (HTTP 401)"},
		{"redirect", fixtureOpts{wrap: func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect)
			})
		}}, "redirects are refused"},
		{"protocol 2025-06-18", fixtureOpts{wrap: func(h http.Handler) http.Handler { return downgrade(h) }}, `answered protocol "2025-06-18"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.o)
			got, err := Read(context.Background(), f.config())
			var re *Error
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read = %q, %v; want a refusal containing %q", got, err, tc.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Error("the refusal quotes the credential")
			}
			if n := f.calls.Load(); n > 1 {
				t.Errorf("search_pull_requests called %d times; nothing is retried", n)
			}
		})
	}
	t.Run("slow server past the read timeout", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{slow: true})
		cfg := f.config()
		cfg.timeout = 300 * time.Millisecond
		_, err := Read(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "calling search_pull_requests failed") {
			t.Fatalf("Read = %v", err)
		}
		if f.calls.Load() != 1 {
			t.Errorf("calls = %d, want 1 (no retry)", f.calls.Load())
		}
	})
}

// downgrade rewrites the initialize answer's protocol version to
// 2025-06-18, as an older server would answer.
func downgrade(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := strings.Replace(rec.Body.String(), `"protocolVersion":"2025-11-25"`, `"protocolVersion":"2025-06-18"`, 1)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = fmt.Fprint(w, body)
	})
}

// TestReleaseEndpointIsFixed: without this package's test-only override a
// read goes to GitHub's read-only server and nowhere else.
func TestReleaseEndpointIsFixed(t *testing.T) {
	var seen string
	cfg := Config{Repository: repo, Token: token, transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = r.URL.String()
		return nil, errors.New("stopped by the test")
	})}
	if _, err := Read(context.Background(), cfg); err == nil {
		t.Fatal("the stopped read succeeded")
	}
	if seen != "https://api.githubcopilot.com/mcp/readonly" {
		t.Fatalf("the read went to %q", seen)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
