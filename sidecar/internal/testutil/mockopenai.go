package testutil

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
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
	out := installFromNPM(tb, "mock-openai.sh", 4*time.Minute,
		"skipping the third-party mock server test (install npm to run it)",
		"the end-to-end test against the mock server must run")
	bin := strings.TrimSpace(string(out))
	if bin == "" {
		tb.Fatal("scripts/mock-openai.sh printed no binary path")
	}

	port := FreeLoopbackPort(tb)
	cmd := exec.Command(bin)
	// An empty working directory: the server reads mock-llm.yaml from there,
	// so it runs on its own default rules, not on anything of ours.
	cmd.Dir = tb.TempDir()
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
