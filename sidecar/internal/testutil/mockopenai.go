package testutil

import (
	_ "embed" // MockOpenAIToolRules
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// MockOpenAI starts the third-party OpenAI-compatible mock server
// (@dwmkerr/mock-llm, installed by name from npm by scripts/mock-openai.sh)
// on a free port of 127.0.0.1 with its default rules (echo the last user
// message, name the requested model), and stops it when the test ends. It
// returns the server's base URL without a path ("http://127.0.0.1:PORT").
//
// It skips only when CI is unset and npm is missing; under CI=true a
// missing npm fails the test, because this test must run in CI.
func MockOpenAI(tb testing.TB) string {
	tb.Helper()
	return startMockOpenAI(tb, "")
}

// MockOpenAIWithRules is MockOpenAI with the server's own rules file
// (mock-llm.yaml: JMESPath matches and templated replies, mock-llm's
// documented configuration) in place of its defaults. The tool-calling
// tests use it to have the server answer with tool_calls and check, by its
// own JMESPath engine, what kmx sent.
func MockOpenAIWithRules(tb testing.TB, rules string) string {
	tb.Helper()
	return startMockOpenAI(tb, rules)
}

// MockOpenAIToolRules makes the mock server a tool-calling model (see
// mockllm_tools.yaml): send 1 offering search_docs and fetch_page (in that
// order, as functions with object schemas) is answered with one batch of
// two calls, call_1 search_docs {"query":"release"} and call_2 fetch_page;
// send 2 carrying that assistant message and both results by call ID (the
// first holding MERGED-PR-12, the second the "not available in this test"
// stub) is answered "Release notes: MERGED-PR-12 is in. The page fetch was
// not available in this test."; anything else gets NO-RULE-MATCHED.
//
//go:embed mockllm_tools.yaml
var MockOpenAIToolRules string

func startMockOpenAI(tb testing.TB, rules string) string {
	tb.Helper()
	out := installFromNPM(tb, "mock-openai.sh", 4*time.Minute,
		"skipping the third-party mock server test (install npm to run it)",
		"the end-to-end test against the mock server must run")
	bin := strings.TrimSpace(string(out))
	if bin == "" {
		tb.Fatal("scripts/mock-openai.sh printed no binary path")
	}

	port := FreeLoopbackPort(tb)
	cmd := exec.Command(bin)
	// The server reads mock-llm.yaml from its working directory: an empty
	// one runs it on its own default rules, not on anything of ours.
	cmd.Dir = tb.TempDir()
	if rules != "" {
		if err := os.WriteFile(filepath.Join(cmd.Dir, "mock-llm.yaml"), []byte(rules), 0o600); err != nil {
			tb.Fatalf("write the mock server's rules: %v", err)
		}
	}
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", fmt.Sprintf("PORT=%d", port))
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start mock server: %v", err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("mock server did not become healthy within 30s; its output:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// FreeLoopbackPort asks the kernel for an unused port on 127.0.0.1.
func FreeLoopbackPort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
