//go:build kmxtest

package ghread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// wantSession is the whole HTTP exchange of one read: no discovery
// (.well-known), no standalone SSE stream (GET), no second session, and
// the session closed with DELETE.
var wantSession = []string{
	"POST /mcp/readonly initialize",
	"POST /mcp/readonly notifications/initialized",
	"POST /mcp/readonly tools/list",
	"POST /mcp/readonly tools/call",
	"DELETE /mcp/readonly",
}

func TestReadProjectsMergedPullRequests(t *testing.T) {
	answer := searchJSON(false,
		item(7, "Add the tool harness", repoURL, "2026-11-30T10:00:00Z"),
		item(8, "Unmerged change (no merged_at)", repoURL, nil),
		item(9, "Other repository", "https://api.github.com/repos/octo-org/Other", "2026-11-30T10:00:00Z"),
		item(10, "Other letter case", "https://api.github.com/repos/Octo-Org/hello-world", "2026-11-30T10:00:00Z"),
		item(11, "Null merged_at", repoURL, json.RawMessage("null")),
		item(12, "Fix the journal", repoURL, "2026-11-29T09:00:00Z"),
		item(13, "Empty merged_at", repoURL, ""),
		map[string]any{"number": 14, "title": "An issue, not a pull request", "repository_url": repoURL},
	)
	for _, jsonReply := range []bool{false, true} {
		t.Run(fmt.Sprintf("jsonReply=%v", jsonReply), func(t *testing.T) {
			f := newFixture(t, fixtureOpts{answer: answer, jsonReply: jsonReply})
			got, err := Read(context.Background(), config())
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
			if got := f.requests(); !slices.Equal(got, wantSession) {
				t.Errorf("HTTP exchange\n got %q\nwant %q", got, wantSession)
			}
			var init struct {
				ProtocolVersion string          `json:"protocolVersion"`
				Capabilities    json.RawMessage `json:"capabilities"`
				ClientInfo      struct{ Name, Version string }
			}
			if err := json.Unmarshal(f.initParams(), &init); err != nil {
				t.Fatalf("initialize params: %v", err)
			}
			// No roots, sampling or elicitation: the client offers the server nothing.
			if init.ProtocolVersion != ProtocolVersion || string(init.Capabilities) != "{}" || init.ClientInfo.Name != "kmx" || init.ClientInfo.Version == "" {
				t.Errorf("initialize params = %s", f.initParams())
			}
		})
	}
}

func TestReadRefuses(t *testing.T) {
	merged := item(7, "Fine", repoURL, "2026-11-30T10:00:00Z")
	tests := []struct {
		name string
		o    fixtureOpts
		want string
		// requests, when set, is the whole HTTP exchange the refusal allows.
		requests []string
	}{
		{name: "incomplete results", o: fixtureOpts{answer: searchJSON(true, merged)}, want: "incomplete"},
		{name: "no incomplete_results", o: fixtureOpts{answer: `{"total_count":1,"items":[]}`}, want: "lacks incomplete_results"},
		{name: "more than a page", o: fixtureOpts{answer: searchJSON(false, slices.Repeat([]map[string]any{merged}, PerPage+1)...)}, want: "21 items on a page of 20"},
		{name: "not JSON", o: fixtureOpts{answer: "no results"}, want: "not the search JSON"},
		{name: "tool error", o: fixtureOpts{answer: "boom", isError: true}, want: "answered with an error"},
		{name: "title holds the credential", o: fixtureOpts{answer: searchJSON(false, item(7, "leak "+token, repoURL, "2026-11-30T10:00:00Z"))}, want: "holds the configured credential"},
		{name: "title holds a credential shape", o: fixtureOpts{answer: searchJSON(false, item(7, "gh"+"p_"+strings.Repeat("Ab1", 12), repoURL, "2026-11-30T10:00:00Z"))}, want: "credential-shaped"},
		{name: "schema change", o: fixtureOpts{answer: searchJSON(false, merged), schema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}, want: "input schema changed",
			requests: append(slices.Clone(wantSession[:3]), "DELETE /mcp/readonly")},
		{name: "2 MiB reply as JSON", o: fixtureOpts{jsonReply: true, extraBytes: 2 << 20}, want: "over 1 MiB"},
		{name: "2 MiB reply as SSE", o: fixtureOpts{extraBytes: 2 << 20}, want: "calling search_pull_requests failed"},
		{name: "oversized SSE event", o: fixtureOpts{extraBytes: MaxEventBytes + 1}, want: "calling search_pull_requests failed"},
		{name: "401", o: fixtureOpts{wrap: status(http.StatusUnauthorized)}, want: "refused the credential (HTTP 401)",
			requests: wantSession[:1]},
		{name: "403", o: fixtureOpts{wrap: status(http.StatusForbidden)}, want: "refused the credential (HTTP 403)",
			requests: wantSession[:1]},
		{name: "401 offering OAuth: no discovery, no authorization flow", o: fixtureOpts{wrap: func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://`+r.Host+`/.well-known/oauth-protected-resource"`)
				http.Error(w, "authorization required", http.StatusUnauthorized)
			})
		}}, want: "refused the credential (HTTP 401)", requests: wantSession[:1]},
		{name: "404 on initialize: no fallback to the old SSE transport", o: fixtureOpts{wrap: status(http.StatusNotFound)}, want: "could not open the MCP session",
			requests: wantSession[:1]},
		{name: "redirect", o: fixtureOpts{wrap: func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/mcp/elsewhere", http.StatusTemporaryRedirect)
			})
		}}, want: "redirects are refused", requests: wantSession[:1]},
		{name: "protocol 2025-06-18", o: fixtureOpts{wrap: downgrade}, want: `answered protocol "2025-06-18"`,
			// Refused right after the handshake: the session is closed, nothing is listed or called.
			requests: []string{"POST /mcp/readonly initialize", "POST /mcp/readonly notifications/initialized", "DELETE /mcp/readonly"}},
		{name: "stream dropped after an event ID: no reconnect", o: fixtureOpts{answer: searchJSON(false, merged), wrap: dropCallStream}, want: "calling search_pull_requests failed",
			requests: wantSession},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.o)
			got, err := Read(context.Background(), config())
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
			reqs := f.requests()
			if tc.requests != nil && !slices.Equal(reqs, tc.requests) {
				t.Errorf("HTTP exchange\n got %q\nwant %q", reqs, tc.requests)
			}
			for _, r := range reqs {
				if strings.HasPrefix(r, "GET ") || strings.Contains(r, "/.well-known/") {
					t.Errorf("the client sent %q: no standalone stream, reconnect or discovery is allowed", r)
				}
			}
		})
	}
}

// TestReadAnswersNoServerRequest: the client advertises no roots,
// sampling or elicitation and answers none of them when a server asks
// anyway; the read itself goes on.
func TestReadAnswersNoServerRequest(t *testing.T) {
	a := &asked{}
	newFixture(t, fixtureOpts{answer: searchJSON(false, item(7, "Fine", repoURL, "2026-11-30T10:00:00Z")), ask: a})
	if _, err := Read(context.Background(), config()); err != nil {
		t.Fatalf("Read: %v", err)
	}
	if a.roots == nil || a.sampling == nil || a.elicitation == nil {
		t.Fatalf("a server request was answered: roots err %v, sampling err %v, elicitation err %v", a.roots, a.sampling, a.elicitation)
	}
	t.Logf("refused: roots: %v; sampling: %v; elicitation: %v", a.roots, a.sampling, a.elicitation)
}

// TestReadSlowServer: a server slower than the read timeout refuses the
// read, with one call and no retry. The timeout is injected (the test
// build's TestTimeoutEnv), so nothing waits 30 s.
func TestReadSlowServer(t *testing.T) {
	f := newFixture(t, fixtureOpts{slow: true})
	t.Setenv(TestTimeoutEnv, "300ms")
	_, err := Read(context.Background(), config())
	if err == nil || !strings.Contains(err.Error(), "calling search_pull_requests failed") {
		t.Fatalf("Read = %v", err)
	}
	if f.calls.Load() != 1 {
		t.Errorf("calls = %d, want 1 (no retry)", f.calls.Load())
	}
}

// TestTestEndpointOverride: even a test build sends only to the loopback
// interface, and a malformed override refuses before anything is sent.
func TestTestEndpointOverride(t *testing.T) {
	if !TestEndpointBuild {
		t.Fatal("a kmxtest build says it has no override")
	}
	const loop = "https://127.0.0.1:1/mcp/readonly"
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"not loopback", map[string]string{TestEndpointEnv: "https://example.com/mcp"}, "must name a loopback address"},
		{"localhost by name", map[string]string{TestEndpointEnv: "https://localhost/mcp"}, "must name a loopback address"},
		{"loopback-looking name", map[string]string{TestEndpointEnv: "https://127.0.0.1.example.com/mcp"}, "must name a loopback address"},
		{"plain http", map[string]string{TestEndpointEnv: "http://127.0.0.1/mcp"}, "not an https URL"},
		{"user info", map[string]string{TestEndpointEnv: "https://user:pw@127.0.0.1/mcp"}, "not an https URL"},
		{"no CA", map[string]string{TestEndpointEnv: loop}, "is not"},
		{"unreadable CA", map[string]string{TestEndpointEnv: loop, TestCAEnv: "/nonexistent/ca.pem"}, "cannot read the CA file"},
		{"bad timeout", map[string]string{TestTimeoutEnv: "soon"}, "not a positive Go duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Read(context.Background(), config())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read = %v, want a refusal containing %q", err, tc.want)
			}
			if err := CheckEndpoint(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckEndpoint = %v, want the same refusal before any run starts", err)
			}
		})
	}
	t.Run("a well-formed override passes the check", func(t *testing.T) {
		newFixture(t, fixtureOpts{})
		if err := CheckEndpoint(); err != nil {
			t.Fatalf("CheckEndpoint = %v", err)
		}
	})
	t.Run("without the override the read goes to GitHub", func(t *testing.T) {
		t.Setenv(TestEndpointEnv, "")
		tg, err := resolveTarget()
		if err != nil || tg.endpoint != "https://api.githubcopilot.com/mcp/readonly" || tg.timeout != Timeout {
			t.Fatalf("resolveTarget = %+v, %v", tg, err)
		}
	})
}

func status(code int) func(http.Handler) http.Handler {
	return func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, http.StatusText(code), code)
		})
	}
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

// dropCallStream lets the server run tools/call, then answers its POST
// with an SSE stream holding only a priming event (an event ID, no data)
// and ends it: the point where a client with retries would reconnect with
// GET and Last-Event-ID.
func dropCallStream(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if !strings.Contains(rec.Body.String(), `"content"`) {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", rec.Header().Get("Mcp-Session-Id"))
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprint(w, "id: 1\ndata: \n\n")
	})
}
