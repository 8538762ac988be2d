package route

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testModel = "kmx-test-model"

// okReply is a well-formed reply naming model with answer text.
func okReply(model, text string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text},
		}},
	})
	return string(b)
}

// trustingClient trusts exactly the test server's certificate through an
// explicit root pool, the way a user's system roots trust a real endpoint.
func trustingClient(t testing.TB, srv *httptest.Server) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
}

func envWith(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// mustCompatible builds the route or fails the test.
func mustCompatible(t testing.TB, cfg Config) *CompatibleModel {
	t.Helper()
	m, err := NewCompatible(cfg)
	if err != nil {
		t.Fatalf("NewCompatible: %v", err)
	}
	return m.(*CompatibleModel)
}

func TestNewCompatibleRefusals(t *testing.T) {
	key := testKey()
	tests := []struct {
		name     string
		cfg      Config
		field    string
		wantText string
	}{
		{"no model", Config{Endpoint: "https://api.example.com/v1"}, "model", "no model name"},
		{"fake with endpoint", Config{Endpoint: "https://api.example.com/v1", Model: "fake"}, "model", "fake model cannot be combined"},
		{"Fake with endpoint", Config{Endpoint: "https://api.example.com/v1", Model: "Fake"}, "model", "fake model cannot be combined"},
		{"no endpoint", Config{Model: "gpt-x"}, "endpoint", "needs an endpoint"},
		{"bad endpoint", Config{Endpoint: "http://localhost:1/v1", Model: "gpt-x"}, "endpoint", "literal address"},
		{"unset variable", Config{Endpoint: "https://api.example.com/v1", Model: "gpt-x", KeyEnv: "KMX_UNSET", Getenv: envWith(nil)}, "key-env", "KMX_UNSET is not set or is empty"},
		{"empty variable", Config{Endpoint: "https://api.example.com/v1", Model: "gpt-x", KeyEnv: "KMX_EMPTY", Getenv: envWith(map[string]string{"KMX_EMPTY": ""})}, "key-env", "drop --key-env"},
		{"invalid variable name", Config{Endpoint: "https://api.example.com/v1", Model: "gpt-x", KeyEnv: "A-B"}, "key-env", "not a valid environment variable name"},
		{"credential with newline", Config{Endpoint: "https://api.example.com/v1", Model: "gpt-x", KeyEnv: "K", Getenv: envWith(map[string]string{"K": key + "\n"})}, "key-env", "cannot be sent"},
		{"credential with space", Config{Endpoint: "https://api.example.com/v1", Model: "gpt-x", KeyEnv: "K", Getenv: envWith(map[string]string{"K": "Bearer " + key})}, "key-env", "cannot be sent"},
		{"credential over http", Config{Endpoint: "http://127.0.0.1:1/v1", Model: "gpt-x", KeyEnv: "K", Getenv: envWith(map[string]string{"K": key})}, "endpoint", "only over https"},
		{"model holds credential", Config{Endpoint: "https://api.example.com/v1", Model: "m-" + key, KeyEnv: "K", Getenv: envWith(map[string]string{"K": key})}, "model", "contains the endpoint credential"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewCompatible(tt.cfg)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("NewCompatible = (%v, %v), want a *ConfigError", m, err)
			}
			if m != nil {
				t.Errorf("NewCompatible returned a model with its refusal")
			}
			if ce.Field != tt.field || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error = %q (field %q), want field %q saying %q", err, ce.Field, tt.field, tt.wantText)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error text holds the credential")
			}
		})
	}
}

func TestNewCompatibleReadsCredentialOnce(t *testing.T) {
	var calls atomic.Int32
	var seen atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization"))
		fmt.Fprint(w, okReply(testModel, "hi"))
	}))
	defer srv.Close()
	key := testKey()
	getenv := func(name string) string {
		calls.Add(1)
		if name == "KMX_KEY" {
			return key
		}
		return ""
	}
	m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", KeyEnv: "KMX_KEY", Model: testModel, Getenv: getenv, HTTPClient: trustingClient(t, srv)})
	for range 3 {
		if _, err := m.Complete(context.Background(), ChatRequest(testModel, "sys", "in")); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("Getenv called %d times, want exactly once (at construction)", got)
	}
	if got := seen.Load(); got != "Bearer "+key {
		t.Errorf("Authorization header was not the bearer credential")
	}
	if !m.ContainsCredential("x" + key + "y") {
		t.Errorf("ContainsCredential misses the exact value")
	}
	if m.ContainsCredential(key[:len(key)-1]) {
		t.Errorf("ContainsCredential matched a partial copy")
	}
	if id := m.Identity(); id != (Identity{Route: Compatible, Model: testModel}) {
		t.Errorf("Identity() = %+v", id)
	}
}

// TestCompatibleSendsOneStrictRequest checks the wire request: method, the
// base path kept exactly, headers, and the JSON body.
func TestCompatibleSendsOneStrictRequest(t *testing.T) {
	type seenReq struct {
		method, path, auth, ctype, accept, agent string
		body                                     map[string]any
	}
	var (
		mu   sync.Mutex
		reqs []seenReq
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		reqs = append(reqs, seenReq{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"),
			r.Header.Get("Accept"), r.Header.Get("User-Agent"), body})
		mu.Unlock()
		fmt.Fprint(w, okReply(testModel, "Release notes: this week"))
	}))
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server is not at 127.0.0.1: %s", srv.URL)
	}

	m := mustCompatible(t, Config{Endpoint: srv.URL + "/Custom/Base/v1", Model: testModel})
	comp, err := m.Complete(context.Background(), ChatRequest(testModel, "Reply briefly.", "this week"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := Completion{Model: testModel, Text: "Release notes: this week", FinishReason: "stop"}
	if !reflect.DeepEqual(comp, want) {
		t.Errorf("Complete = %+v, want %+v", comp, want)
	}
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.method != http.MethodPost || r.path != "/Custom/Base/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /Custom/Base/v1/chat/completions", r.method, r.path)
	}
	if r.auth != "" {
		t.Errorf("keyless route sent an Authorization header")
	}
	if r.ctype != "application/json" || r.accept != "application/json" || r.agent != "kmx-local-preview" {
		t.Errorf("Content-Type, Accept, User-Agent = %q, %q, %q", r.ctype, r.accept, r.agent)
	}
	if r.body["model"] != testModel || r.body["stream"] != false {
		t.Errorf("body model/stream = %v/%v, want %s/false", r.body["model"], r.body["stream"], testModel)
	}
	msgs, _ := r.body["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("body has %d messages, want system + user", len(msgs))
	}
	sys, _ := msgs[0].(map[string]any)
	usr, _ := msgs[1].(map[string]any)
	if sys["role"] != "system" || sys["content"] != "Reply briefly." || usr["role"] != "user" || usr["content"] != "this week" {
		t.Errorf("messages = %v", msgs)
	}
}

func TestCompatibleRefusesEchoedCredential(t *testing.T) {
	key := testKey()
	// \u escapes of the first letters: the raw body then does not hold the
	// value byte for byte, only its JSON-escaped spelling.
	escaped := `\u0067\u0068` + key[2:]
	tests := []struct {
		name   string
		body   string
		refuse bool
	}{
		{"echoed in the answer", okReply(testModel, "your header was Bearer "+key), true},
		{"JSON-escaped in the answer", strings.Replace(okReply(testModel, "PLACEHOLDER"), "PLACEHOLDER", escaped, 1), true},
		{"in a field kmx discards", strings.Replace(okReply(testModel, "fine"), `"id":"chatcmpl-1"`, `"id":"`+key+`"`, 1), true},
		{"escaped in a discarded field", strings.Replace(okReply(testModel, "fine"), `"id":"chatcmpl-1"`, `"id":"`+escaped+`"`, 1), true},
		{"partial copy is not the value", okReply(testModel, "prefix "+key[:20]), false},
		{"no copy", okReply(testModel, "fine"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", KeyEnv: "KMX_KEY", Model: testModel,
				Getenv: envWith(map[string]string{"KMX_KEY": key}), HTTPClient: trustingClient(t, srv)})
			comp, err := m.Complete(context.Background(), ChatRequest(testModel, "sys", "in"))
			if !tt.refuse {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				return
			}
			var re *ReplyError
			if !errors.As(err, &re) || re.Class != ClassCredential {
				t.Fatalf("Complete = (%+v, %v), want a %s refusal", comp, err, ClassCredential)
			}
			if !reflect.DeepEqual(comp, Completion{}) {
				t.Errorf("a refused reply still returned a completion")
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), key[2:]) {
				t.Errorf("error text holds the credential")
			}
		})
	}
}

func TestCompatibleRefusesRequestHoldingCredential(t *testing.T) {
	key := testKey()
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, okReply(testModel, "x"))
	}))
	defer srv.Close()
	m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", KeyEnv: "KMX_KEY", Model: testModel,
		Getenv: envWith(map[string]string{"KMX_KEY": key}), HTTPClient: trustingClient(t, srv)})
	for _, req := range []Request{
		ChatRequest(testModel, "instructions with "+key, "in"),
		ChatRequest(testModel, "sys", "input "+key),
		ChatRequest("judge-"+key, "sys", "in"),
	} {
		_, err := m.Complete(context.Background(), req)
		var re *ReplyError
		if !errors.As(err, &re) || re.Class != ClassRequestCredential {
			t.Errorf("Complete = %v, want a %s refusal", err, ClassRequestCredential)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("error text holds the credential")
		}
	}
	if hits.Load() != 0 {
		t.Errorf("server saw %d requests; a refused request must not be sent", hits.Load())
	}
}

func TestCompatibleDoesNotFollowRedirects(t *testing.T) {
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			var targetHits atomic.Int32
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				targetHits.Add(1)
				fmt.Fprint(w, okReply(testModel, "redirected answer"))
			}))
			defer target.Close()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+r.URL.Path, code)
			}))
			defer srv.Close()
			m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", Model: testModel})
			_, err := m.Complete(context.Background(), ChatRequest(testModel, "sys", "in"))
			var re *ReplyError
			if !errors.As(err, &re) || re.Class != ClassRedirect || re.Status != code {
				t.Fatalf("Complete = %v, want a redirect refusal with status %d", err, code)
			}
			if targetHits.Load() != 0 {
				t.Errorf("the redirect target was contacted")
			}
			if strings.Contains(err.Error(), target.URL) {
				t.Errorf("error text repeats the redirect location")
			}
		})
	}
}

func TestCompatibleRefusesOversizedRequestBeforeSending(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, okReply(testModel, "x"))
	}))
	defer srv.Close()
	m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", Model: testModel})
	tests := []struct {
		name   string
		input  string
		refuse bool
	}{
		{"one byte over", strings.Repeat("a", MaxBodyBytes), true},
		{"well over", strings.Repeat("é", MaxBodyBytes), true},
		{"comfortably under", strings.Repeat("a", MaxBodyBytes-1024), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			_, err := m.Complete(context.Background(), ChatRequest(testModel, "sys", tt.input))
			var re *ReplyError
			if tt.refuse {
				if !errors.As(err, &re) || re.Class != ClassRequestTooLarge {
					t.Fatalf("Complete = %v, want a %s refusal", err, ClassRequestTooLarge)
				}
				if hits.Load() != before {
					t.Errorf("an oversized request was sent")
				}
				return
			}
			if err != nil || hits.Load() != before+1 {
				t.Fatalf("Complete = %v with %d sends, want one successful send", err, hits.Load()-before)
			}
		})
	}
}

func TestCompatibleReplySizeCap(t *testing.T) {
	// pad fills a valid reply with trailing-free whitespace inside the object
	// so the body is exactly n bytes of well-formed JSON.
	pad := func(n int) string {
		base := okReply(testModel, "fine")
		return base[:len(base)-1] + strings.Repeat(" ", n-len(base)) + "}"
	}
	tests := []struct {
		name   string
		body   string
		refuse bool
	}{
		{"exactly 1 MiB", pad(MaxBodyBytes), false},
		{"1 MiB + 1", pad(MaxBodyBytes + 1), true},
		{"4 MiB", pad(4 * MaxBodyBytes), true},
	}
	for _, tt := range tests {
		// The reply is read into a buffer sized from Content-Length when the
		// server announces one, and grown otherwise: the cap holds both ways.
		for _, announced := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/content-length %v", tt.name, announced), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if announced {
						w.Header().Set("Content-Length", strconv.Itoa(len(tt.body)))
					} else {
						w.(http.Flusher).Flush() // chunked: no length announced
					}
					fmt.Fprint(w, tt.body)
				}))
				defer srv.Close()
				m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", Model: testModel})
				_, err := m.Complete(context.Background(), ChatRequest(testModel, "sys", "in"))
				var re *ReplyError
				if tt.refuse != (errors.As(err, &re) && re.Class == ClassOversized) {
					t.Fatalf("Complete = %v, want refused-as-oversized %v", err, tt.refuse)
				}
				if !tt.refuse && err != nil {
					t.Fatalf("Complete: %v", err)
				}
			})
		}
	}
}

// TestCompatibleKeepsConnectionsAtConcurrency sends waves of eight
// simultaneous requests (the server holds each until all eight have
// arrived, so each wave needs eight connections at once) and counts the
// connections the server accepts: the route's own transport keeps every
// one alive for the next wave, instead of keeping net/http's default two
// per host and dialing the rest again.
func TestCompatibleKeepsConnectionsAtConcurrency(t *testing.T) {
	const width, waves = 8, 4
	var (
		mu      sync.Mutex
		arrived int
		release = make(chan struct{})
		dials   atomic.Int32
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		arrived++
		if arrived == width {
			arrived = 0
			close(release)
			release = make(chan struct{})
		}
		wait := release
		if arrived == 0 {
			wait = nil
		}
		mu.Unlock()
		if wait != nil {
			<-wait
		}
		fmt.Fprint(w, okReply(testModel, "Release notes: wave"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", Model: testModel})
	for wave := range waves {
		var wg sync.WaitGroup
		errs := make(chan error, width)
		for range width {
			wg.Go(func() {
				if _, err := m.Complete(context.Background(), ChatRequest(testModel, "sys", "in")); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("wave %d: %v", wave, err)
		}
	}
	if got := dials.Load(); got != width {
		t.Errorf("the server accepted %d connections for %d waves of %d requests, want %d (one per concurrent request, each kept alive)", got, waves, width, width)
	}
}

func TestCompatibleCancelStopsRequestInFlight(t *testing.T) {
	arrived := make(chan struct{})
	torn := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body to its end lets the server watch the connection,
		// so its request context ends when the client tears it down.
		_, _ = io.Copy(io.Discard, r.Body)
		close(arrived)
		select {
		case <-r.Context().Done():
			close(torn)
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", Model: testModel})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	_, err := m.Complete(ctx, ChatRequest(testModel, "sys", "in"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Complete = %v, want it to wrap context.Canceled", err)
	}
	select {
	case <-torn:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the request torn down")
	}
}

func TestCompatibleDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", Model: testModel})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := m.Complete(ctx, ChatRequest(testModel, "sys", "in"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("Complete = %v, want a deadline error wrapping context.DeadlineExceeded", err)
	}
	// A context already done sends nothing.
	_, err = m.Complete(ctx, ChatRequest(testModel, "sys", "in"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Complete on an expired context = %v", err)
	}
}

func TestCompatibleNeverRetries(t *testing.T) {
	for _, code := range []int{500, 502, 503, 429} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(code)
			}))
			defer srv.Close()
			m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", Model: testModel})
			_, err := m.Complete(context.Background(), ChatRequest(testModel, "sys", "in"))
			var re *ReplyError
			if !errors.As(err, &re) || re.Class != ClassStatus || re.Status != code {
				t.Fatalf("Complete = %v, want a status %d refusal", err, code)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(code)) {
				t.Errorf("error %q does not name the status code", err)
			}
			if hits.Load() != 1 {
				t.Errorf("server saw %d requests, want exactly 1", hits.Load())
			}
		})
	}
}

// TestCompatibleTransportErrorsQuoteNothing covers failures below HTTP: a
// closed port, an untrusted certificate, and a server that answers with a
// non-HTTP line holding a marker the error must not repeat.
func TestCompatibleTransportErrorsQuoteNothing(t *testing.T) {
	const marker = "MARK-raw-garbage"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Read(make([]byte, 4096))
				_, _ = c.Write([]byte("XTTP/9.9 " + marker + " nonsense\r\n\r\n"))
			}()
		}
	}()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, okReply(testModel, "x"))
	}))
	defer untrusted.Close()

	tests := []struct {
		name, endpoint, wantText string
	}{
		{"closed port", closedURL + "/v1", "could not connect"},
		{"untrusted certificate", untrusted.URL + "/v1", "not signed by a trusted authority"},
		{"non-HTTP reply", "http://" + ln.Addr().String() + "/v1", "not valid HTTP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustCompatible(t, Config{Endpoint: tt.endpoint, Model: testModel})
			_, err := m.Complete(context.Background(), ChatRequest(testModel, "sys", "in"))
			var re *ReplyError
			if !errors.As(err, &re) || re.Class != ClassTransport {
				t.Fatalf("Complete = %v, want a transport refusal", err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not say %q", err, tt.wantText)
			}
			if strings.Contains(err.Error(), marker) || strings.Contains(err.Error(), "nonsense") {
				t.Errorf("error %q quotes bytes the server sent", err)
			}
		})
	}
}

func BenchmarkCompatibleRoundTrip(b *testing.B) {
	srv := httptest.NewServer(answering([]byte(okReply(testModel, "Release notes: benchmark"))))
	defer srv.Close()
	roundTrips(b, mustCompatible(b, Config{Endpoint: srv.URL + "/v1", Model: testModel}))
}

// answering is an endpoint that reads each request and answers reply.
func answering(reply []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	})
}

// roundTrips is the timed loop of the round-trip benchmarks: one chat
// request through m per op.
func roundTrips(b *testing.B, m *CompatibleModel) {
	req := ChatRequest(testModel, "You draft release notes.", "Draft notes for this week")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompatibleRoundTripWithKey is the round trip on a keyed route
// (so over TLS, kept alive) with a 2.1 KB answer: besides the exchange and
// the decode, the credential checks on the request's texts, the raw reply
// and the decoded answer (secrets.ContainsValue, which builds display views
// of each text).
func BenchmarkCompatibleRoundTripWithKey(b *testing.B) {
	key := testKey()
	srv := httptest.NewTLSServer(answering([]byte(okReply(testModel, strings.Repeat("Release notes: a line of text.\n", 64)))))
	defer srv.Close()
	roundTrips(b, mustCompatible(b, Config{Endpoint: srv.URL + "/v1", Model: testModel, KeyEnv: "KMX_BENCH_KEY",
		Getenv: envWith(map[string]string{"KMX_BENCH_KEY": key}), HTTPClient: trustingClient(b, srv)}))
}

// TestCompatibleSharesItsHeaderSafely sends 320 requests from 16 goroutines
// over one HTTP/2 connection (TLS, as a keyed route is) with the route's
// one read-only header: every request carries exactly the route's header.
// Under -race it also shows nothing in net/http writes to the shared map.
func TestCompatibleSharesItsHeaderSafely(t *testing.T) {
	key := testKey()
	var (
		mu     sync.Mutex
		protos = map[string]int{}
		bad    int
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		protos[r.Proto]++
		if r.Header.Get("Authorization") != "Bearer "+key || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get("Accept") != "application/json" || r.Header.Get("User-Agent") != "kmx-local-preview" {
			bad++
		}
		mu.Unlock()
		fmt.Fprint(w, okReply(testModel, "Release notes: shared"))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true,
	}}
	m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", Model: testModel, KeyEnv: "K",
		Getenv: envWith(map[string]string{"K": key}), HTTPClient: client})
	judge, err := m.WithModel("kmx-judge-model") // shares the header
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for range 20 {
				if _, err := m.Complete(context.Background(), ChatRequest(testModel, "sys", "in")); err != nil {
					t.Error(err)
					return
				}
			}
			if g == 0 {
				// The judge's route refuses the reply (it names the agent's
				// model), but its request went out with the same header.
				_, _ = judge.Complete(context.Background(), ChatRequest("kmx-judge-model", "sys", "in"))
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if protos["HTTP/2.0"] != 321 || bad != 0 {
		t.Errorf("server saw %v requests, %d with a header other than the route's; want 321 over HTTP/2.0, none different", protos, bad)
	}
}
