//go:build !kmxtest

package ghread

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// dialLog stands in for the network: it records every address the read's
// transport dials and fails the dial, so nothing leaves the machine.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialLog) dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	return nil, errors.New("dial stopped by the test")
}

// stopDials makes every clone of http.DefaultTransport (the base of each
// read) dial through d for the rest of the test.
func stopDials(t *testing.T) *dialLog {
	d := &dialLog{}
	dt := http.DefaultTransport.(*http.Transport)
	saved := dt.DialContext
	dt.DialContext = d.dial
	t.Cleanup(func() { dt.DialContext = saved })
	return d
}

// TestReleaseReadGoesOnlyToGitHub: a shipped build reads from GitHub's
// read-only server and nowhere else, directly, whatever proxy the
// environment names. Go reads the proxy variables once per process, so
// the check runs in a child test process started with them set.
func TestReleaseReadGoesOnlyToGitHub(t *testing.T) {
	if os.Getenv("KMX_GHREAD_PROXY_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestReleaseReadGoesOnlyToGitHub$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "KMX_GHREAD_PROXY_CHILD=1",
			"HTTPS_PROXY=http://proxy.invalid:3128", "https_proxy=http://proxy.invalid:3128",
			"ALL_PROXY=http://proxy.invalid:3128", "NO_PROXY=", "no_proxy=", TestEndpointEnv+"=")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "dialled only api.githubcopilot.com:443") {
			t.Fatalf("the child test failed: %v\n%s", err, out)
		}
		return
	}
	if u, _ := http.ProxyFromEnvironment(&http.Request{URL: &url.URL{Scheme: "https", Host: "api.githubcopilot.com"}}); u == nil {
		t.Fatal("the child process sees no proxy in its environment: the check would prove nothing")
	}
	d := stopDials(t)
	_, err := Read(context.Background(), Config{Repository: "octo-org/Hello-World", Token: "fixture-credential-value-4242"})
	var re *Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "dial stopped by the test") {
		t.Fatalf("Read = %v, want the stopped dial as a refusal", err)
	}
	if len(d.addrs) != 1 || d.addrs[0] != "api.githubcopilot.com:443" {
		t.Fatalf("the read dialled %q; want only api.githubcopilot.com:443 (no proxy, no retry)", d.addrs)
	}
	t.Log("dialled only api.githubcopilot.com:443")
}

// TestReleaseRefusesTheOverride: a shipped build has no endpoint override;
// setting its variable refuses the read before anything is dialled.
func TestReleaseRefusesTheOverride(t *testing.T) {
	if TestEndpointBuild {
		t.Fatal("an untagged build says it has the test endpoint override")
	}
	d := stopDials(t)
	t.Setenv(TestEndpointEnv, "https://127.0.0.1:8443/mcp/readonly")
	_, err := Read(context.Background(), Config{Repository: "octo-org/Hello-World", Token: "fixture-credential-value-4242"})
	if err == nil || !strings.Contains(err.Error(), TestEndpointEnv+" is set, but this build of kmx has no test endpoint") {
		t.Fatalf("Read = %v, want the override refused", err)
	}
	if len(d.addrs) != 0 {
		t.Fatalf("the refused read dialled %q", d.addrs)
	}
}
