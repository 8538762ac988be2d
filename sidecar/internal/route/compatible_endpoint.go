package route

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// keyEnvName is the shape of an environment variable name kmx will read a
// credential from: a portable POSIX name, so the same name works in every
// shell and on Windows.
var keyEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// chatCompletionsPath is appended to the base exactly as given.
const chatCompletionsPath = "/chat/completions"

// Endpoint is a validated OpenAI-compatible base URL. It is kept exactly as
// the user gave it: kmx never discovers, normalises or rewrites a route, so
// the one request goes to Base() + "/chat/completions".
type Endpoint struct {
	base   string
	keyEnv string
}

// Base returns the base URL exactly as given.
func (e Endpoint) Base() string { return e.base }

// KeyEnv returns the name of the variable holding the bearer credential, or
// "" for a keyless endpoint.
func (e Endpoint) KeyEnv() string { return e.keyEnv }

// ChatCompletionsURL is where the request is sent.
func (e Endpoint) ChatCompletionsURL() string { return e.base + chatCompletionsPath }

// ValidateKeyEnv checks a credential variable name. Callers that accept an
// explicit --key-env flag use it to refuse an empty value: ParseEndpoint takes
// "" to mean "no credential".
func ValidateKeyEnv(name string) error {
	if name == "" {
		return configErrIn("key-env", "the credential variable name is empty", func(w problem.Words) string {
			return "name the environment variable that holds the credential, or drop " + w(problem.KeyEnv, "") + " for an endpoint that needs none"
		})
	}
	if len(secrets.Scan(name)) > 0 {
		return configErr("key-env", "the credential variable name looks like a credential value",
			"give the name of the environment variable that holds the credential (for example OPENAI_API_KEY), never the value itself")
	}
	if !keyEnvName.MatchString(name) {
		// A name that fails the pattern may be a pasted credential, so it is
		// never echoed.
		return configErr("key-env", "the credential variable name is not a valid environment variable name",
			"use letters, digits and underscores, not starting with a digit (for example OPENAI_API_KEY); give the variable's name, never its value")
	}
	return nil
}

// nameKeyEnvNext is the next step of a credential found in an endpoint URL.
func nameKeyEnvNext(w problem.Words) string {
	return "remove the credential from the URL and name the variable that holds it with " + w(problem.KeyEnv, "")
}

// ParseEndpoint validates an OpenAI-compatible base URL and the optional name
// of the variable holding its bearer credential (keyEnv "" means none).
//
// The rules: HTTPS, or keyless plain HTTP only at the literal addresses
// 127.0.0.1 or [::1] ("localhost" and other loopback spellings are refused,
// since a name can resolve elsewhere); a credential requires HTTPS; no
// userinfo, query or fragment; no credential-shaped text anywhere; no
// trailing "/" (the path is joined as given, never rewritten). A refusal is a
// *ConfigError whose text never repeats the URL, since it may hold a secret.
func ParseEndpoint(raw string, keyEnv string) (Endpoint, error) {
	if keyEnv != "" {
		if err := ValidateKeyEnv(keyEnv); err != nil {
			return Endpoint{}, err
		}
	}
	if raw == "" {
		return Endpoint{}, configErr("endpoint", "the endpoint is empty",
			"give the base URL of an OpenAI-compatible API, for example http://127.0.0.1:11434/v1")
	}
	if len(secrets.Scan(raw)) > 0 {
		return Endpoint{}, configErrIn("endpoint", "the endpoint contains a credential-shaped value", nameKeyEnvNext)
	}
	if strings.TrimSpace(raw) != raw || strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return Endpoint{}, configErr("endpoint", "the endpoint contains spaces or control characters",
			"give the base URL alone, with no surrounding or embedded whitespace")
	}
	// url.Parse errors quote the input, so only our own words are returned.
	u, err := url.Parse(raw)
	if err != nil {
		return Endpoint{}, configErr("endpoint", "the endpoint is not a valid URL",
			"give an absolute URL such as https://api.example.com/v1 or http://127.0.0.1:11434/v1")
	}
	if u.User != nil {
		return Endpoint{}, configErrIn("endpoint", "the endpoint contains user information (user:password@)", func(w problem.Words) string {
			return "remove it from the URL; put a bearer credential in an environment variable and name it with " + w(problem.KeyEnv, "")
		})
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return Endpoint{}, configErr("endpoint", "the endpoint must start with https:// (or http:// at 127.0.0.1 or [::1])",
			"give an absolute https:// URL, or http://127.0.0.1:PORT/... for a local server")
	}
	if u.Opaque != "" || u.Host == "" {
		return Endpoint{}, configErr("endpoint", "the endpoint has no host",
			"give an absolute URL with a host, such as https://api.example.com/v1")
	}
	if u.RawQuery != "" || u.ForceQuery || strings.Contains(raw, "?") {
		return Endpoint{}, configErr("endpoint", "the endpoint has a query string",
			`remove everything from "?" on: kmx sends to the base URL + /chat/completions and never moves or adds query parameters`)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return Endpoint{}, configErr("endpoint", "the endpoint has a fragment",
			`remove everything from "#" on`)
	}
	if strings.HasSuffix(raw, "/") {
		return Endpoint{}, configErr("endpoint", `the endpoint ends with "/"`,
			`remove the trailing "/": kmx appends /chat/completions to the base exactly as given`)
	}
	if p := u.Port(); p != "" || strings.HasSuffix(u.Host, ":") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Endpoint{}, configErr("endpoint", "the endpoint's port is not a number from 1 to 65535",
				"fix the port after the host")
		}
	}
	if credentialLikePath(u.EscapedPath()) {
		return Endpoint{}, configErrIn("endpoint", "the endpoint path looks like it carries a credential", nameKeyEnvNext)
	}
	if u.Scheme == "http" {
		if !literalLoopback(u.Host) {
			return Endpoint{}, configErr("endpoint",
				"plain http:// is allowed only at the literal address 127.0.0.1 or [::1] (not localhost or other names)",
				"use https://, or write the local address as http://127.0.0.1:PORT or http://[::1]:PORT")
		}
		if keyEnv != "" {
			return Endpoint{}, configErrIn("endpoint", "a credential is sent only over https://", func(w problem.Words) string {
				return "use an https:// endpoint, or drop " + w(problem.KeyEnv, "") + " for a keyless local server"
			})
		}
	}
	return Endpoint{base: raw, keyEnv: keyEnv}, nil
}

// credentialLikePath reports path segments that name a key, beyond the shapes
// secrets.Scan knows (key=, token=, apikey, ...). Long hex or UUID segments
// are allowed: gateways put account and deployment IDs in the base path.
func credentialLikePath(path string) bool {
	for _, seg := range strings.Split(path, "/") {
		lower := strings.ToLower(seg)
		for _, word := range []string{"key=", "token=", "secret=", "password=", "apikey", "api_key", "api-key", "bearer"} {
			if strings.Contains(lower, word) {
				return true
			}
		}
	}
	return false
}

// literalLoopback reports a host (with optional port) written as exactly
// 127.0.0.1 or [::1]. Names such as localhost, other 127/8 addresses and
// other spellings of ::1 are not accepted: plain HTTP is allowed only where
// the address itself, not a resolver, guarantees the traffic stays local.
func literalLoopback(hostport string) bool {
	for _, lit := range []string{"127.0.0.1", "[::1]"} {
		if hostport == lit || strings.HasPrefix(hostport, lit+":") {
			return true
		}
	}
	return false
}

// String describes the endpoint for logs without its path, which is the part
// a careless user might have put something private in.
func (e Endpoint) String() string {
	u, err := url.Parse(e.base)
	if err != nil || e.base == "" {
		return "(no endpoint)"
	}
	return fmt.Sprintf("%s://%s", u.Scheme, u.Host)
}
