package route

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// mockOpenAIBinary installs (or reuses) the third-party mock server through
// scripts/mock-openai.sh and returns its executable. It skips only when CI is
// unset and npm is missing; under CI=true a missing npm fails the test.
func mockOpenAIBinary(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("npm is not installed and CI is unset: skipping the third-party mock server test (install npm to run it)")
		}
		t.Fatalf("CI is set but npm is not installed: the end-to-end test against the mock server must run")
	}
	root := testutil.ModuleRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "mock-openai.sh"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/mock-openai.sh: %v\n%s", err, stderr.String())
	}
	bin := strings.TrimSpace(string(out))
	if bin == "" {
		t.Fatalf("scripts/mock-openai.sh printed no binary path")
	}
	return bin
}

// freeLoopbackPort asks the kernel for an unused port on 127.0.0.1.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startMockOpenAI runs the mock server on 127.0.0.1 with its default rules
// (echo the last user message and the requested model) and stops it when
// the test ends.
func startMockOpenAI(t *testing.T, bin string) string {
	t.Helper()
	port := freeLoopbackPort(t)
	cmd := exec.Command(bin)
	// An empty working directory: the server reads mock-llm.yaml from there,
	// so it runs on its own default rules, not on anything of ours.
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", fmt.Sprintf("PORT=%d", port))
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mock server: %v", err)
	}
	t.Cleanup(func() {
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
			t.Fatalf("mock server did not become healthy within 30s; its output:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMockOpenAIServer sends real requests through the compatible route to
// an OpenAI-compatible server nobody on this project wrote.
func TestMockOpenAIServer(t *testing.T) {
	base := startMockOpenAI(t, mockOpenAIBinary(t))
	tests := []struct {
		name, model, input string
		wantStatus         int // 0: accepted, the answer echoes the input
	}{
		{"echo", "gpt-5.6-terra", "Draft notes for this week", 0},
		{"other model name echoed exactly", "llama3.2:3b-instruct", "hello there", 0},
		{"unicode input", "kmx-test-model", "caf\u00e9 \u2014 r\u00e9sum\u00e9", 0},
		// Finding: mock-llm pastes the input into its JSON template without
		// escaping, so an input holding a double quote makes it answer 500.
		// The route reports the status and nothing else.
		{"input with a quote", "kmx-test-model", `say "MARK-quote"`, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustCompatible(t, Config{Endpoint: base + "/v1", Model: tt.model})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			comp, err := m.Complete(ctx, ChatRequest(tt.model, "Reply with the input.", tt.input))
			if tt.wantStatus != 0 {
				var re *ReplyError
				if !errors.As(err, &re) || re.Class != ClassStatus || re.Status != tt.wantStatus {
					t.Fatalf("Complete = (%+v, %v), want a status %d refusal", comp, err, tt.wantStatus)
				}
				if strings.Contains(err.Error(), "MARK") || strings.Contains(err.Error(), "SyntaxError") {
					t.Errorf("error %q quotes the input or the server's body", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := Completion{Model: tt.model, Text: tt.input, FinishReason: "stop"}
			if comp != want {
				t.Errorf("Complete = %+v, want %+v", comp, want)
			}
		})
	}
}
