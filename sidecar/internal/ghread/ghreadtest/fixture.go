// Package ghreadtest is an owned imitation of GitHub's read-only MCP
// server for tests outside package ghread: the go-sdk MCP server offering
// search_pull_requests over TLS on 127.0.0.1, with a certificate of its own.
// It counts every HTTP request and every tool call, so a test can prove that
// a run made zero network calls.
//
// Reads reach it only in test builds (-tags kmxtest): Use sets the
// ghread override variables for one test. It is imported by tests and by
// the real-VS-Code test's fixture command only, never by shipped code.
package ghreadtest

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The ghread override variables (see ghread/endpoint_kmxtest.go).
const (
	EndpointEnv = "KMX_TEST_GITHUB_MCP_URL"
	CAEnv       = "KMX_TEST_GITHUB_MCP_CA"
)

// Item is one search result item.
type Item struct {
	Number int
	Title  string
	// Repository is OWNER/REPO of its repository_url.
	Repository string
	// Merged adds pull_request.merged_at.
	Merged bool
}

// Options shape the fixture's answers. The zero value answers every call
// with no items.
type Options struct {
	Items []Item
	// Incomplete answers incomplete_results: true.
	Incomplete bool
	// Status, when not 0 or 200, answers every HTTP request with it.
	Status int
	// ChangedSchema offers search_pull_requests with another input schema.
	ChangedSchema bool
	// Hang makes search_pull_requests answer only once its request ends.
	Hang bool
	// BeforeAnswer, if set, runs when a search_pull_requests call arrives,
	// before it is answered: a test acts while a run is inside its read.
	BeforeAnswer func()
}

// Fixture is a running fixture.
type Fixture struct {
	// URL is the MCP endpoint (https://127.0.0.1:PORT/mcp/readonly).
	URL string
	// CAFile is a PEM file holding the fixture's certificate.
	CAFile   string
	srv      *httptest.Server
	requests atomic.Int64
	calls    atomic.Int64
}

// Requests counts every HTTP request the fixture received.
func (f *Fixture) Requests() int64 { return f.requests.Load() }

// Calls counts the search_pull_requests calls it answered.
func (f *Fixture) Calls() int64 { return f.calls.Load() }

// Env is the environment that points a test build's reads here.
func (f *Fixture) Env() []string {
	return []string{EndpointEnv + "=" + f.URL, CAEnv + "=" + f.CAFile}
}

// Close stops the fixture.
func (f *Fixture) Close() { f.srv.Close() }

// Start serves the fixture; dir receives the certificate file.
func Start(dir string, o Options) (*Fixture, error) {
	f := &Fixture{}
	server := mcp.NewServer(&mcp.Implementation{Name: "github-mcp-fixture", Version: "1"}, nil)
	props := map[string]any{
		"query":   map[string]any{"type": "string"},
		"page":    map[string]any{"type": "number"},
		"perPage": map[string]any{"type": "number"},
	}
	if o.ChangedSchema {
		props = map[string]any{"q": map[string]any{"type": "string"}}
	}
	schema := map[string]any{"type": "object", "properties": props, "required": []string{"query"}}
	server.AddTool(&mcp.Tool{Name: "search_pull_requests", Description: "Search pull requests", InputSchema: schema},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.calls.Add(1)
			if o.BeforeAnswer != nil {
				o.BeforeAnswer()
			}
			if o.Hang {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			text, err := answer(o)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if o.Status != 0 && o.Status != http.StatusOK {
			http.Error(w, http.StatusText(o.Status), o.Status)
			return
		}
		h.ServeHTTP(w, r)
	}))
	f.srv.StartTLS()
	f.URL = f.srv.URL + "/mcp/readonly"
	f.CAFile = filepath.Join(dir, "github-mcp-fixture-ca.pem")
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	if err := os.WriteFile(f.CAFile, block, 0o600); err != nil {
		f.srv.Close()
		return nil, err
	}
	return f, nil
}

func answer(o Options) (string, error) {
	items := make([]map[string]any, 0, len(o.Items))
	for _, it := range o.Items {
		m := map[string]any{
			"number": it.Number, "title": it.Title, "state": "closed",
			"repository_url": "https://api.github.com/repos/" + it.Repository,
			"body":           "not for the model", "user": map[string]any{"login": "someone"},
		}
		pr := map[string]any{"url": "https://api.github.com/pulls/x"}
		if it.Merged {
			pr["merged_at"] = "2026-11-30T10:00:00Z"
		}
		m["pull_request"] = pr
		items = append(items, m)
	}
	b, err := json.Marshal(map[string]any{"total_count": len(items), "incomplete_results": o.Incomplete, "items": items})
	if err != nil {
		return "", errors.New("encode the fixture answer")
	}
	return string(b), nil
}
