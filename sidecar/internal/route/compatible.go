package route

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// Compatible is the route name of an explicit OpenAI-compatible endpoint.
const Compatible = "compatible"

// MaxBodyBytes caps both the request body kmx sends and the reply body it
// reads on the compatible route.
const MaxBodyBytes = 1 << 20

// Config is what the compatible route is built from. Endpoint and KeyEnv come
// from outside the agent file (flags, settings); Model is the effective model
// name.
type Config struct {
	// Endpoint is the base URL, for example http://127.0.0.1:11434/v1.
	Endpoint string
	// KeyEnv names the environment variable holding a bearer credential; ""
	// for a keyless endpoint.
	KeyEnv string
	// Model is the model name requested from the endpoint.
	Model string
	// Getenv reads KeyEnv; nil means os.Getenv. It is called once, in
	// NewCompatible.
	Getenv func(string) string
	// HTTPClient is optional (tests pass one that trusts their TLS server).
	// kmx copies it and replaces its redirect policy: redirects are never
	// followed.
	HTTPClient *http.Client
	// Words names settings in what the route says (a reply naming another
	// model): nil is the command line's flags (problem.Flags).
	Words problem.Words
}

// CredentialChecker is implemented by routes that hold a credential in
// memory. The runner asks it whether text it is about to journal contains
// that credential, so the value itself never leaves the route.
type CredentialChecker interface {
	ContainsCredential(s string) bool
}

// CompatibleModel sends one Chat Completions request per call to an explicit
// OpenAI-compatible endpoint and strictly checks the reply. It is safe for
// concurrent use: all its fields are set once in NewCompatible.
type CompatibleModel struct {
	endpoint   Endpoint
	model      string
	credential string
	client     *http.Client
	// url is the endpoint's chat completions URL, built once.
	url string
	// header is every request's header, built once and never written
	// after NewCompatible: requests share it read-only (http.Client and the
	// transport copy a header before changing it; RoundTrip must not modify
	// the request).
	header http.Header
	// words: Config.Words, never nil.
	words problem.Words
}

var (
	_ Model             = (*CompatibleModel)(nil)
	_ CredentialChecker = (*CompatibleModel)(nil)
)

// NewCompatible builds the compatible route. It validates the endpoint, the
// model name and the credential variable, and reads the credential once into
// memory; every problem is a *ConfigError raised before anything is sent.
func NewCompatible(cfg Config) (Model, error) {
	if cfg.Model == "" {
		return nil, configErrIn("model", "no model name is set for the endpoint", noModelNext)
	}
	if strings.EqualFold(cfg.Model, Fake) {
		return nil, configErrIn("model", "the fake model cannot be combined with an endpoint", fakeWithEndpointNext)
	}
	if cfg.Endpoint == "" {
		return nil, configErrIn("endpoint", "a non-fake model needs an endpoint", func(w problem.Words) string {
			return "pass " + w(problem.Endpoint, "") + " with an OpenAI-compatible base URL, or use model: fake"
		})
	}
	ep, err := ParseEndpoint(cfg.Endpoint, cfg.KeyEnv)
	if err != nil {
		return nil, err
	}
	var credential string
	if cfg.KeyEnv != "" {
		getenv := cfg.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		credential = getenv(cfg.KeyEnv)
		if credential == "" {
			return nil, configErrIn("key-env", "the environment variable "+cfg.KeyEnv+" is not set or is empty", func(w problem.Words) string {
				return "set it to the endpoint's bearer credential, or drop " + w(problem.KeyEnv, "") + " for an endpoint that needs none"
			})
		}
		if !headerSafe(credential) {
			return nil, configErr("key-env", "the value of "+cfg.KeyEnv+" has whitespace, control or non-ASCII characters and cannot be sent as a bearer credential",
				"set the variable to the credential alone, with no quotes, spaces or line breaks")
		}
		if secrets.ContainsValue(cfg.Model, credential) {
			return nil, configErr("model", "the model name contains the endpoint credential",
				"give the model's name, not the credential")
		}
	}
	words := cfg.Words
	if words == nil {
		words = problem.Flags
	}
	return &CompatibleModel{
		endpoint:   ep,
		model:      cfg.Model,
		credential: credential,
		client:     newClient(cfg.HTTPClient),
		url:        ep.ChatCompletionsURL(),
		header:     requestHeader(credential),
		words:      words,
	}, nil
}

// requestHeader is the header of every request on the route.
func requestHeader(credential string) http.Header {
	h := http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json"},
		"User-Agent":   {"kmx-local-preview"},
	}
	if credential != "" {
		h["Authorization"] = []string{"Bearer " + credential}
	}
	return h
}

// headerSafe reports a credential that can be sent verbatim after "Bearer ":
// visible ASCII only. Anything else would be rejected or altered by HTTP, and
// the transport's own error could otherwise be the first to mention it.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// maxIdlePerEndpoint is how many kept-alive connections the default
// transport holds to the endpoint: the largest --concurrency, so a run at
// any concurrency reuses its connections instead of closing all but
// net/http's default two after each wave of requests and dialing anew.
const maxIdlePerEndpoint = 32

// newClient copies the caller's client (or builds one) with redirects
// refused. The default transport dials the endpoint directly: no proxy from
// the environment, so the request reaches that endpoint only.
func newClient(base *http.Client) *http.Client {
	var c http.Client
	if base != nil {
		c = *base
	} else {
		c.Transport = &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   10 * time.Second,
			MaxIdleConns:          maxIdlePerEndpoint,
			MaxIdleConnsPerHost:   maxIdlePerEndpoint,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// Identity names the compatible route and the configured model.
func (c *CompatibleModel) Identity() Identity {
	return Identity{Route: Compatible, Model: c.model}
}

// Endpoint returns the validated endpoint (never the credential).
func (c *CompatibleModel) Endpoint() Endpoint { return c.endpoint }

// ContainsCredential reports whether s contains the route's exact credential
// in any of the forms secrets.ContainsValue checks. It is false for a keyless
// route. The runner calls it on everything it is about to journal.
func (c *CompatibleModel) ContainsCredential(s string) bool {
	return c.credential != "" && secrets.ContainsValue(s, c.credential)
}

// wireRequest is the Chat Completions request body.
type wireRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Stream   bool      `json:"stream"`
}

// Complete sends req once (no retry, no fallback) and returns the checked
// completion. req.Model is the model asked for (the judge may name its own);
// the reply must name exactly that model. Every refusal is a *ReplyError; a
// cancelled or expired ctx stops the request in flight and the error wraps
// ctx.Err().
func (c *CompatibleModel) Complete(ctx context.Context, req Request) (Completion, error) {
	if err := ctx.Err(); err != nil {
		return Completion{}, &ReplyError{Class: ClassTransport, Detail: "the request was cancelled before it was sent", err: err}
	}
	if req.Model == "" {
		return Completion{}, configErr("model", "the request names no model",
			"build the request with route.ChatRequest and the route's model name")
	}
	if len(req.Messages) == 0 {
		return Completion{}, configErr("model", "the request has no messages",
			"build the request with route.ChatRequest")
	}
	if c.requestHoldsCredential(req) {
		return Completion{}, replyErr(ClassRequestCredential, "")
	}
	body, err := CompatibleBody(req)
	if err != nil {
		return Completion{}, err
	}
	if len(body) > MaxBodyBytes {
		return Completion{}, replyErr(ClassRequestTooLarge, "")
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		// The URL was validated already; say so without repeating it.
		return Completion{}, &ReplyError{Class: ClassTransport, Detail: "the request could not be built for the endpoint", err: err}
	}
	httpReq.Header = c.header

	resp, err := c.client.Do(httpReq)
	if err != nil {
		return Completion{}, c.transportErr(ctx, err, "sending the request")
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return Completion{}, &ReplyError{Class: ClassRedirect, Status: resp.StatusCode}
	}
	if resp.StatusCode != http.StatusOK {
		return Completion{}, &ReplyError{Class: ClassStatus, Status: resp.StatusCode}
	}
	raw, err := readCapped(resp.Body, resp.ContentLength)
	if err != nil {
		return Completion{}, c.transportErr(ctx, err, "reading the reply")
	}
	if len(raw) > MaxBodyBytes {
		return Completion{}, replyErr(ClassOversized, "")
	}
	// The raw check runs first, so a copy of the credential anywhere in the
	// envelope (even in a field kmx discards) refuses the reply.
	if c.credential != "" && c.ContainsCredential(string(raw)) {
		return Completion{}, replyErr(ClassCredential, "")
	}
	var comp Completion
	if req.HasTools() {
		comp, err = DecodeToolReply(raw, req.Model, req.Tools, req.afterResults())
	} else {
		comp, err = DecodeReply(raw, req.Model)
	}
	if err != nil {
		var re *ReplyError
		if errors.As(err, &re) && re.Class == ClassModel {
			re.Detail = wrongModelDetail(raw, req.Model, c.words)
		}
		return Completion{}, err
	}
	if c.ContainsCredential(comp.Text) || c.ContainsCredential(comp.Model) {
		return Completion{}, replyErr(ClassCredential, "")
	}
	for _, tc := range comp.ToolCalls {
		// The arguments are JSON inside a JSON string: a copy escaped
		// twice is only visible once decoded.
		if c.ContainsCredential(tc.ID) || c.ContainsCredential(tc.Name) || c.ContainsCredential(tc.Arguments) {
			return Completion{}, replyErr(ClassCredential, "")
		}
	}
	return comp, nil
}

// requestHoldsCredential reports the route's credential anywhere in req:
// the model name, a message (role, text, tool calls, the call it answers)
// or an offered tool's definition.
func (c *CompatibleModel) requestHoldsCredential(req Request) bool {
	if c.credential == "" {
		return false
	}
	if c.ContainsCredential(req.Model) {
		return true
	}
	for _, m := range req.Messages {
		if c.ContainsCredential(m.Content) || c.ContainsCredential(m.Role) || c.ContainsCredential(m.ToolCallID) {
			return true
		}
		for _, tc := range m.ToolCalls {
			if c.ContainsCredential(tc.ID) || c.ContainsCredential(tc.Name) || c.ContainsCredential(tc.Arguments) {
				return true
			}
		}
	}
	for _, d := range req.Tools {
		if c.ContainsCredential(d.Name) || c.ContainsCredential(d.Description) || c.ContainsCredential(d.Parameters) {
			return true
		}
	}
	return false
}

// readCapped reads r to its end or to one byte past MaxBodyBytes, whichever
// comes first (as io.ReadAll of an io.LimitReader would), into one buffer
// sized from the announced length when there is one.
func readCapped(r io.Reader, announced int64) ([]byte, error) {
	size := 512
	if announced >= 0 && announced <= MaxBodyBytes {
		size = int(announced) + 1 // room to see the end without growing
	}
	buf := make([]byte, 0, size)
	for len(buf) <= MaxBodyBytes {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), MaxBodyBytes+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// transportErr turns a failed exchange into a ReplyError. A context error is
// reported as cancellation or deadline. Any other cause is described in kmx's
// own words by its kind: the network library's text can quote bytes the
// server sent (a malformed status line, for one), so it is never shown.
func (c *CompatibleModel) transportErr(ctx context.Context, err error, doing string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		detail := doing + " was cancelled"
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			detail = doing + " ran past the deadline"
		}
		return &ReplyError{Class: ClassTransport, Detail: detail, err: ctxErr}
	}
	return &ReplyError{Class: ClassTransport, Detail: doing + " failed: " + transportKind(err), err: err}
}

// transportKind names what went wrong on the wire, from the error's type only.
func transportKind(err error) string {
	var (
		dnsErr      *net.DNSError
		opErr       *net.OpError
		unknownCA   x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		invalidCert x509.CertificateInvalidError
		recordErr   tls.RecordHeaderError
		netErr      net.Error
	)
	switch {
	case errors.As(err, &dnsErr):
		return "the endpoint's host name did not resolve"
	case errors.As(err, &unknownCA):
		return "the endpoint's TLS certificate is not signed by a trusted authority"
	case errors.As(err, &hostnameErr):
		return "the endpoint's TLS certificate is not valid for its host"
	case errors.As(err, &invalidCert):
		return "the endpoint's TLS certificate is invalid or expired"
	case errors.As(err, &recordErr):
		return "the endpoint did not speak TLS (is it http:// ?)"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "the connection timed out"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return "could not connect to the endpoint (is the server running at that address?)"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the connection closed before the reply was complete"
	}
	return "the connection failed or the reply was not valid HTTP"
}
