package ghread

import (
	"net/http"
	"time"
)

// The test-only endpoint override. A build with the kmxtest tag
// (tests only: never `make build` or scripts/package.sh) reads these
// variables at each Read, so a test can point kmx, in process or as a
// built binary, at an owned MCP fixture on a loopback address (see
// endpoint_kmxtest.go and package ghreadtest). Every
// other build refuses a read while TestEndpointEnv is set (nothing is
// sent), so a shipped kmx never sends the credential anywhere but
// localtools.GitHubMCPURL, and a test that meant a fixture never reaches
// GitHub instead.
const (
	// TestEndpointEnv names the override endpoint: an https URL whose
	// host is a loopback address.
	TestEndpointEnv = "KMX_TEST_GITHUB_MCP_URL"
	// TestCAEnv names a PEM file of the certificates the override's TLS
	// server is trusted with (required with TestEndpointEnv; the system
	// roots are not used then).
	TestCAEnv = "KMX_TEST_GITHUB_MCP_CA"
	// TestTimeoutEnv names a Go duration replacing the 30 s read timeout,
	// so a slow-server case needs no 30 s wait.
	TestTimeoutEnv = "KMX_TEST_GITHUB_MCP_TIMEOUT"
)

// CheckEndpoint applies the override rules without reading: nil when a
// read would go to GitHub's server (or, in a test build, to a well-formed
// override), else the read's refusal. Runs call it before anything is
// created, so a shipped build with TestEndpointEnv set, or a malformed
// override in a test build, refuses before the journal exists.
func CheckEndpoint() error {
	_, err := resolveTarget()
	return err
}

// EndpointHint is what to change when CheckEndpoint refuses.
const EndpointHint = "unset " + TestEndpointEnv + ": only test builds of kmx (built with -tags kmxtest) read from a test endpoint"

// target is where one read goes and how long it may take.
type target struct {
	endpoint string
	base     http.RoundTripper
	timeout  time.Duration
}

// newBaseTransport is the HTTP transport of a read: the default one with
// proxies from the environment (and their credentials) ignored.
func newBaseTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return t
}
