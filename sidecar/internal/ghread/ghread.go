// Package ghread is the one live tool read: github_list_merged_prs as a
// single call of search_pull_requests on GitHub's read-only MCP server, with
// the go-sdk MCP client pinned to protocol 2025-11-25.
//
// Each Read opens a fresh Streamable HTTP session (no standalone SSE, no
// reconnect, no OAuth, no sampling, roots or elicitation), checks the remote
// tool's input schema, calls it once with the fixed query
// `repo:OWNER/REPO is:pr is:merged` (page 1, 20 per page), closes the
// session, and returns only {number, title} of items whose repository_url
// is exactly https://api.github.com/repos/OWNER/REPO and that carry an
// explicit pull_request.merged_at. Redirects are refused, proxies from the
// environment are ignored, every HTTP reply body is capped at 1 MiB and
// every SSE event at 256 KiB, and a read has 30 s inside the caller's
// deadline. Any failure refuses the whole read; nothing is retried.
//
// The endpoint is fixed (localtools.GitHubMCPURL). Only a test build (the
// kmxtest build tag; see endpoint.go) can point a read at a
// loopback fixture; every shipped build refuses the override, so no
// shipped kmx can send the credential to another origin.
package ghread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
	"github.com/kmxdev/kmx/sidecar/internal/version"
)

// Fixed terms of the read.
const (
	// ProtocolVersion is the pinned MCP protocol. To move, requalify the
	// hosted schema and output, then change the pin and its tests.
	ProtocolVersion = "2025-11-25"
	// RemoteTool is the read-only server's tool kmx calls.
	RemoteTool = "search_pull_requests"
	// PerPage is the page size of the one page read.
	PerPage = 20
	// MaxReplyBytes caps each HTTP reply body.
	MaxReplyBytes = 1 << 20
	// MaxEventBytes caps each SSE event of a reply.
	MaxEventBytes = 256 << 10
	// Timeout bounds one read, inside the example's deadline.
	Timeout = 30 * time.Second
	// maxTitleBytes bounds one projected title.
	maxTitleBytes = 1024
)

// Config is one read: the bound repository and the credential value read
// once for this invocation.
type Config struct {
	// Repository is OWNER/REPO in GitHub's canonical letter case.
	Repository string
	// Token is the credential; it is sent only as the bearer header to the
	// fixed endpoint and never written anywhere.
	Token string
	// Version is kmx's version, sent as the client version (empty means
	// version.Version).
	Version string
}

// PullRequest is what reaches the model of one merged pull request.
type PullRequest struct {
	Number int64  `json:"number"`
	Title  string `json:"title"`
}

// Result is the projected tool result.
type Result struct {
	Repository   string        `json:"repository"`
	PullRequests []PullRequest `json:"pullRequests"`
}

// Error is a refused read. Its message never holds the credential.
type Error struct{ Msg string }

func (e *Error) Error() string { return "the live GitHub read was refused: " + e.Msg }

func fail(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Read performs the one read and returns the projected result as JSON text.
func Read(ctx context.Context, cfg Config) (string, error) {
	if cfg.Token == "" {
		return "", fail("no credential")
	}
	t, err := resolveTarget()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	cs, err := open(ctx, cfg, t)
	if err != nil {
		return "", err
	}
	text, readErr := search(ctx, cs, cfg)
	closeErr := cs.Close()
	if readErr != nil {
		return "", readErr
	}
	if closeErr != nil {
		return "", fail("closing the MCP session failed: %s", clean(closeErr, cfg.Token))
	}
	return project(text, cfg)
}

// open starts the pinned session: one Streamable HTTP connection with the
// bearer credential, no standalone SSE, no retries, no redirects, capped
// replies and events, no client capabilities, and the initialize answer's
// protocol checked against the pin.
func open(ctx context.Context, cfg Config, t target) (*mcp.ClientSession, error) {
	httpClient := &http.Client{
		Transport: &cappedTransport{base: t.base, token: cfg.Token, done: ctx.Done()},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the server redirected; redirects are refused")
		},
	}
	transport := &mcp.StreamableClientTransport{
		Endpoint:             t.endpoint,
		HTTPClient:           httpClient,
		MaxRetries:           -1, // 0 would mean 5
		DisableStandaloneSSE: true,
		MaxEventSize:         MaxEventBytes,
	}
	v := cfg.Version
	if v == "" {
		v = version.Version
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "kmx", Version: v}, &mcp.ClientOptions{
		// Advertise nothing: no roots, sampling or elicitation.
		Capabilities: &mcp.ClientCapabilities{},
		Logger:       slog.New(slog.DiscardHandler),
	})
	// And answer nothing a server asks for anyway (the SDK would answer
	// roots/list with an empty list): only pings and notifications pass.
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "ping" && !strings.HasPrefix(method, "notifications/") {
				return nil, fmt.Errorf("kmx answers no %s", method)
			}
			return next(ctx, method, req)
		}
	})
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return nil, fail("could not open the MCP session: %s", clean(err, cfg.Token))
	}
	if v := cs.InitializeResult().ProtocolVersion; v != ProtocolVersion {
		_ = cs.Close()
		return nil, fail("the server answered protocol %q; kmx is pinned to %s", v, ProtocolVersion)
	}
	return cs, nil
}

// search checks the remote tool's schema and calls it once with the fixed
// query.
func search(ctx context.Context, cs *mcp.ClientSession, cfg Config) (string, error) {
	tools, err := cs.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		return "", fail("listing the server's tools failed: %s", clean(err, cfg.Token))
	}
	var remote *mcp.Tool
	for _, t := range tools.Tools {
		if t.Name == RemoteTool {
			remote = t
		}
	}
	if remote == nil {
		return "", fail("the server does not offer %s on its first tools page", RemoteTool)
	}
	if err := checkSchema(remote.InputSchema); err != nil {
		return "", err
	}
	query := "repo:" + cfg.Repository + " is:pr is:merged"
	return callTool(ctx, cs, cfg.Token, RemoteTool, map[string]any{"query": query, "page": 1, "perPage": PerPage})
}

// callTool calls one tool once and returns its one text content.
func callTool(ctx context.Context, cs *mcp.ClientSession, token, name string, args map[string]any) (string, error) {
	out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", fail("calling %s failed: %s", name, clean(err, token))
	}
	if out.IsError {
		return "", fail("%s answered with an error", name)
	}
	if len(out.Content) != 1 {
		return "", fail("%s answered %d content items; one JSON text was expected", name, len(out.Content))
	}
	text, ok := out.Content[0].(*mcp.TextContent)
	if !ok {
		return "", fail("%s answered content that is not text", name)
	}
	return text.Text, nil
}

// checkSchema accepts the hosted search schema: an object whose query is a
// required string and whose page and perPage are numbers.
func checkSchema(raw any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return fail("the %s input schema cannot be read", RemoteTool)
	}
	var s struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Type != "object" {
		return fail("the %s input schema changed (not an object schema)", RemoteTool)
	}
	want := map[string]string{"query": "string", "page": "number", "perPage": "number"}
	for k, typ := range want {
		if s.Properties[k].Type != typ {
			return fail("the %s input schema changed (%s is not a %s)", RemoteTool, k, typ)
		}
	}
	for _, r := range s.Required {
		if r != "query" {
			return fail("the %s input schema changed (it requires %q)", RemoteTool, r)
		}
	}
	return nil
}

type searchResult struct {
	TotalCount        *int64       `json:"total_count"`
	IncompleteResults *bool        `json:"incomplete_results"`
	Items             []searchItem `json:"items"`
}

type searchItem struct {
	Number        int64   `json:"number"`
	Title         *string `json:"title"`
	RepositoryURL string  `json:"repository_url"`
	PullRequest   *struct {
		MergedAt *string `json:"merged_at"`
	} `json:"pull_request"`
}

// project checks the search result and keeps {number, title} of the items
// attributed to the repository and explicitly merged.
func project(text string, cfg Config) (string, error) {
	var r searchResult
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return "", fail("the %s result is not the search JSON", RemoteTool)
	}
	switch {
	case r.IncompleteResults == nil || r.Items == nil:
		return "", fail("the %s result lacks incomplete_results or items", RemoteTool)
	case *r.IncompleteResults:
		return "", fail("GitHub reported the search as incomplete; run again later")
	case len(r.Items) > PerPage:
		return "", fail("the %s result has %d items on a page of %d", RemoteTool, len(r.Items), PerPage)
	}
	wantURL := "https://api.github.com/repos/" + cfg.Repository
	res := Result{Repository: cfg.Repository, PullRequests: []PullRequest{}}
	for _, it := range r.Items {
		if it.RepositoryURL != wantURL || it.PullRequest == nil || it.PullRequest.MergedAt == nil || *it.PullRequest.MergedAt == "" {
			continue
		}
		if it.Number <= 0 || it.Title == nil {
			return "", fail("a merged item has no number or title")
		}
		title := *it.Title
		if len(title) > maxTitleBytes {
			return "", fail("the title of #%d is over %d bytes", it.Number, maxTitleBytes)
		}
		if secrets.ContainsValue(title, cfg.Token) {
			return "", fail("the title of #%d holds the configured credential", it.Number)
		}
		if f := secrets.Scan(title); len(f) > 0 {
			return "", fail("the title of #%d holds a credential-shaped value (%s)", it.Number, f[0].Shape)
		}
		res.PullRequests = append(res.PullRequests, PullRequest{Number: it.Number, Title: title})
	}
	b, err := json.Marshal(res)
	if err != nil {
		return "", fmt.Errorf("encode the projected result: %w", err)
	}
	if err := localtools.CheckResult(string(b)); err != nil {
		return "", fail("%s", err.Error())
	}
	return string(b), nil
}

// clean removes the credential from an error message, should a transport
// ever quote it.
func clean(err error, token string) string {
	msg := err.Error()
	if token != "" {
		msg = strings.ReplaceAll(msg, token, "[credential]")
	}
	return msg
}

// cappedTransport adds the bearer credential and caps each reply body.
// Once the read's time is up it sends nothing more: the SDK's own
// best-effort requests after that (the cancellation notice, the closing
// DELETE) would otherwise hold the read open for up to 5 s each.
type cappedTransport struct {
	base  http.RoundTripper
	token string
	done  <-chan struct{}
}

// errTimeUp refuses a request after the read's deadline.
var errTimeUp = errors.New("the read's time is up; nothing more is sent")

func (t *cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case <-t.done:
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, errTimeUp
	default:
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("the server refused the credential (HTTP %d)", resp.StatusCode)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: MaxReplyBytes}
	return resp, nil
}

// errReplyTooLarge ends a reply over MaxReplyBytes.
var errReplyTooLarge = errors.New("the reply is over 1 MiB")

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errReplyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, errReplyTooLarge
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
