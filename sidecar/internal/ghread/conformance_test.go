//go:build kmxtest

package ghread

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// conformanceClientEnv makes this test binary the conformance suite's
// client instead of running tests (see TestMain).
const conformanceClientEnv = "KMX_GHREAD_CONFORMANCE_CLIENT"

// TestMain runs the client entry when the conformance suite launches this
// binary: the suite appends its server URL to the command and names the
// scenario in MCP_CONFORMANCE_SCENARIO.
func TestMain(m *testing.M) {
	if os.Getenv(conformanceClientEnv) == "1" {
		os.Exit(conformanceClient(os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

// conformanceClient is the ghread client as the suite sees it. The
// session is ghread's own open (the pinned protocol and every transport
// limit of a read, with the scenario server's plain-HTTP loopback URL as
// the endpoint, which only a test can give); the call is ghread's own
// callTool. The one difference from Read: the tool and its arguments are
// the scenario's (add_numbers {a: 5, b: 3}), not search_pull_requests with
// the fixed query, because the suite's servers offer only their own tools.
func conformanceClient(scenario, url string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := Config{Repository: "octo-org/Hello-World", Token: "conformance-credential-value"}
	cs, err := open(ctx, cfg, target{endpoint: url, base: newBaseTransport(), timeout: 20 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cs.Close() }()
	switch scenario {
	case "initialize":
		fmt.Println("initialized with protocol", cs.InitializeResult().ProtocolVersion)
	case "tools_call":
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if len(tools.Tools) != 1 || tools.Tools[0].Name != "add_numbers" {
			fmt.Fprintf(os.Stderr, "the scenario offers %d tools, not just add_numbers\n", len(tools.Tools))
			return 1
		}
		text, err := callTool(ctx, cs, cfg.Token, "add_numbers", map[string]any{"a": 5, "b": 3})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(text)
	default:
		fmt.Fprintf(os.Stderr, "the ghread client has no entry for scenario %q\n", scenario)
		return 2
	}
	if err := cs.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		return 1
	}
	return 0
}

// TestConformanceClient runs the MCP conformance suite's client scenarios
// against the ghread client: initialize and tools_call must pass.
//
// sse-retry is run too and must fail, for kmx's reasons: its server answers
// protocol 2025-03-26 (the pin refuses it) and the scenario wants a GET
// reconnection after a dropped stream (there is no reconnect). It is the
// suite's own proof that neither is done.
//
// Not run, because they test what this client deliberately refuses:
// elicitation-sep1034-client-defaults (no elicitation is advertised) and
// every auth/* scenario (no OAuth, discovery or token exchange: the
// credential is a fixed bearer token). See docs/tools.md.
func TestConformanceClient(t *testing.T) {
	mt := testutil.InstallMCPTools(t)
	baseline := filepath.Join(t.TempDir(), "baseline.yml")
	if err := os.WriteFile(baseline, []byte("client:\n  - sse-retry\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scenario string
		pass     bool
		// want is text the client's own output must hold.
		want string
	}{
		{"initialize", true, "initialized with protocol 2025-11-25"},
		{"tools_call", true, "The sum of 5 and 3 is 8"},
		{"sse-retry", false, `answered protocol "2025-03-26"; kmx is pinned to 2025-11-25`},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			results := t.TempDir()
			cmd := exec.CommandContext(ctx, mt.Node, mt.Conformance, "client",
				"--command", os.Args[0], "--scenario", tc.scenario,
				"--expected-failures", baseline, "--timeout", "60000", "-o", results)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), conformanceClientEnv+"=1", "HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("conformance suite: %v (a failure outside the baseline, or a baselined scenario that now passes)\n%s", err, out)
			}
			dirs, _ := filepath.Glob(filepath.Join(results, tc.scenario+"-*"))
			if len(dirs) != 1 {
				t.Fatalf("want one result folder for %s under %s, got %v\n%s", tc.scenario, results, dirs, out)
			}
			b, err := os.ReadFile(filepath.Join(dirs[0], "checks.json"))
			if err != nil {
				t.Fatal(err)
			}
			var checks []struct {
				ID, Status, ErrorMessage string
			}
			if err := json.Unmarshal(b, &checks); err != nil {
				t.Fatalf("checks.json: %v", err)
			}
			succeeded, failed := 0, []string{}
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					succeeded++
				case "FAILURE", "WARNING":
					failed = append(failed, c.ID)
				}
			}
			if tc.pass && (succeeded == 0 || len(failed) > 0) {
				t.Errorf("%s: %d checks passed, failed: %v\n%s", tc.scenario, succeeded, failed, b)
			}
			if !tc.pass && (len(failed) == 0 || !slices.Equal(failed, []string{"client-sse-graceful-reconnect"})) {
				t.Errorf("%s should fail only because the client does not reconnect; failed: %v", tc.scenario, failed)
			}
			stdout, _ := os.ReadFile(filepath.Join(dirs[0], "stdout.txt"))
			stderr, _ := os.ReadFile(filepath.Join(dirs[0], "stderr.txt"))
			if !strings.Contains(string(stdout)+string(stderr), tc.want) {
				t.Errorf("the client's output lacks %q\nstdout: %s\nstderr: %s", tc.want, stdout, stderr)
			}
		})
	}
}
