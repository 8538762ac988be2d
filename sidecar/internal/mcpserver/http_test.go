package mcpserver_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/mcpserver"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

var announced = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/mcp`)

// serveHTTP starts the test-only HTTP mode on 127.0.0.1:0 and returns the
// announced URL; the server stops when the test ends.
func serveHTTP(t *testing.T, cfg mcpserver.Config) string {
	t.Helper()
	cfg.Roots, cfg.ExplicitRoots = testRoots(t), true
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.ServeHTTP(ctx, mcpserver.New(cfg), "127.0.0.1:0", pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no announce line: %v", err)
	}
	// Drain anything else so the server never blocks on its announce writer.
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url := announced.FindString(line)
	if url == "" {
		t.Fatalf("announce line has no loopback URL: %q", line)
	}
	return url
}

func TestStreamableHTTP(t *testing.T) {
	url := serveHTTP(t, mcpserver.Config{Version: "test", Getenv: envWith(map[string]string{"KMX_HOME": testutil.PrivateDir(t)})})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "kmx-test", Version: "0"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "Test", Arguments: map[string]any{"file": fixture(t, "triage.agent.md")}})
	if err != nil {
		t.Fatal(err)
	}
	var rep runner.Report
	decode(t, res, &rep)
	if res.IsError || rep.Verdict != runner.VerdictFail || !strings.Contains(text(res), "local preview: 1 pass, 1 fail") {
		t.Fatalf("isError=%v verdict=%q text=%s", res.IsError, rep.Verdict, text(res))
	}

	// A request naming another host is refused: a web page cannot reach
	// the server through DNS rebinding.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "attacker.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host header: status %d, want 403", resp.StatusCode)
	}
}

func TestServeHTTPRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "localhost:0", "[::]:0"} {
		err := mcpserver.ServeHTTP(context.Background(), mcpserver.New(mcpserver.Config{}), addr, io.Discard)
		if err == nil || !strings.Contains(err.Error(), addr) {
			t.Errorf("ServeHTTP(%q) = %v, want a refusal naming the address", addr, err)
		}
	}
}
