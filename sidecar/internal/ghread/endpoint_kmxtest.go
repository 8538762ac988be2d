//go:build kmxtest

package ghread

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/localtools"
)

// TestEndpointBuild reports whether this build honours the test-only
// endpoint override: this is a test build (tag kmxtest).
const TestEndpointBuild = true

// resolveTarget applies the test-only override variables. Even a test
// build sends only over TLS to a loopback address, trusting only the
// fixture's own certificate.
func resolveTarget() (target, error) {
	base := newBaseTransport()
	t := target{endpoint: localtools.GitHubMCPURL, base: base, timeout: Timeout}
	if raw := os.Getenv(TestEndpointEnv); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "https" || u.User != nil {
			return target{}, fail("the test endpoint override is unusable: %s is not an https URL without user info", TestEndpointEnv)
		}
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			return target{}, fail("the test endpoint override is unusable: %s must name a loopback address (127.0.0.1 or ::1), not %q", TestEndpointEnv, u.Hostname())
		}
		path := os.Getenv(TestCAEnv)
		if path == "" {
			return target{}, fail("the test endpoint override is unusable: %s is set but %s (the fixture's PEM certificate) is not", TestEndpointEnv, TestCAEnv)
		}
		pem, err := os.ReadFile(path)
		if err != nil {
			return target{}, fail("the test endpoint override is unusable: %s: cannot read the CA file: %v", TestCAEnv, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return target{}, fail("the test endpoint override is unusable: %s: %s holds no PEM certificate", TestCAEnv, path)
		}
		base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		t.endpoint = raw
	}
	if raw := os.Getenv(TestTimeoutEnv); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 {
			return target{}, fail("the test endpoint override is unusable: %s is not a positive Go duration such as 300ms", TestTimeoutEnv)
		}
		t.timeout = d
	}
	return t, nil
}
