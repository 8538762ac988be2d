//go:build kmxtest

package ghread

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
)

// Test builds only (go test -tags kmxtest, and the sidecar the real-VS-Code
// test builds): reads go to an owned fixture instead of GitHub when
// TestEndpointEnv names an https URL on a loopback address, trusted through
// the PEM certificate file named by TestCAEnv. Shipped builds compile
// endpoint_release.go instead and ignore both variables.
const (
	TestEndpointEnv = "KMX_TEST_GITHUB_MCP_URL"
	TestCAEnv       = "KMX_TEST_GITHUB_MCP_CA"
)

func testEndpoint() (string, http.RoundTripper, error) {
	raw := os.Getenv(TestEndpointEnv)
	if raw == "" {
		return "", nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" {
		return "", nil, fmt.Errorf("%s must be an https URL", TestEndpointEnv)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return "", nil, fmt.Errorf("%s must name a loopback address", TestEndpointEnv)
	}
	pem, err := os.ReadFile(os.Getenv(TestCAEnv))
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", TestCAEnv, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return "", nil, errors.New(TestCAEnv + " holds no PEM certificate")
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return raw, t, nil
}
