package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// nodeTools are the third-party MCP clients scripts/mcp-tools.sh installs.
type nodeTools struct {
	node, inspector, conformance string
}

// installNodeTools installs them (testutil.InstallMCPTools: cached, and
// skipped only when CI is unset and npm is missing).
func installNodeTools(t *testing.T) nodeTools {
	t.Helper()
	mt := testutil.InstallMCPTools(t)
	return nodeTools{node: mt.Node, inspector: mt.Inspector, conformance: mt.Conformance}
}

// TestInspectorCLI lists and calls the tools over stdio with the official
// inspector's CLI mode, checking its exit codes and the JSON it prints.
func TestInspectorCLI(t *testing.T) {
	nt := installNodeTools(t)
	bin := testutil.KMX(t)
	kmxHome := testutil.PrivateDir(t)
	// The inspector keeps a catalog and may use a keychain under HOME: give
	// it a private one so nothing of the user's is read or written.
	home := t.TempDir()

	type callResult struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Schema   string `json:"schema"`
			Label    string `json:"label"`
			Verdict  string `json:"verdict"`
			Examples []struct {
				ID      string  `json:"id"`
				Answer  *string `json:"answer"`
				Verdict string  `json:"verdict"`
			} `json:"examples"`
			Refusal *struct {
				Next string `json:"next"`
			} `json:"refusal"`
		} `json:"structuredContent"`
	}
	tests := []struct {
		name        string
		args        []string
		wantExit    int
		wantVerdict string
		wantText    string
		check       func(t *testing.T, r callResult)
	}{
		{
			name: "tools/list", args: []string{"--method", "tools/list"},
			check: func(t *testing.T, r callResult) {
				var names []string
				for _, tool := range r.Tools {
					names = append(names, tool.Name)
				}
				if strings.Join(names, ",") != "Chat,Explain,Run,Test" {
					t.Errorf("tools = %v, want Chat, Explain, Run, Test", names)
				}
			},
		},
		{
			name:     "Test with a failing example",
			args:     []string{"--method", "tools/call", "--tool-name", "Test", "--tool-arg", "file=" + fixture(t, "triage.agent.md")},
			wantExit: 0, wantVerdict: "fail", wantText: "local preview: 1 pass, 1 fail, 0 unknown — verdict fail",
		},
		{
			name:     "Test whose judge is inconclusive",
			args:     []string{"--method", "tools/call", "--tool-name", "Test", "--tool-arg", "file=" + fixture(t, "unknown.agent.md")},
			wantExit: 0, wantVerdict: "unknown", wantText: "0 pass, 0 fail, 1 unknown — verdict unknown",
		},
		{
			name:     "Run one example",
			args:     []string{"--method", "tools/call", "--tool-name", "Run", "--tool-arg", "file=" + fixture(t, "pass.agent.md"), `examples=["greet"]`, "model=fake"},
			wantExit: 0, wantVerdict: "pass", wantText: "answer: hello",
			check: func(t *testing.T, r callResult) {
				if len(r.StructuredContent.Examples) != 1 || r.StructuredContent.Examples[0].Answer == nil {
					t.Errorf("Run report lacks the answer: %+v", r.StructuredContent.Examples)
				}
			},
		},
		{
			name:     "Chat, first turn",
			args:     []string{"--method", "tools/call", "--tool-name", "Chat", "--tool-arg", "file=" + fixture(t, "talker.agent.md"), "input=hello"},
			wantExit: 0, wantText: "agent: Turn 1: hello",
		},
		{
			// A new kmx process: the history is rebuilt from the journal and
			// sent, so the fake answers with the turn number 2.
			name:     "Chat, second turn carries the history",
			args:     []string{"--method", "tools/call", "--tool-name", "Chat", "--tool-arg", "file=" + fixture(t, "talker.agent.md"), "input=again"},
			wantExit: 0, wantText: "agent: Turn 2: again",
		},
		{
			name: "Test of a file with an error is an isError result",
			args: []string{"--method", "tools/call", "--tool-name", "Test", "--tool-arg", "file=" + fixture(t, "broken.agent.md")},
			// The inspector exits 5 when a tool returns isError: true.
			wantExit: 5, wantVerdict: "refused", wantText: "next: fix the errors",
			check: func(t *testing.T, r callResult) {
				if !r.IsError || r.StructuredContent.Refusal == nil || r.StructuredContent.Refusal.Next == "" {
					t.Errorf("isError=%v refusal=%+v", r.IsError, r.StructuredContent.Refusal)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := append([]string{nt.inspector, "--cli", "-e", "KMX_HOME=" + kmxHome}, tc.args...)
			// "--" ends --tool-arg's list so the command is not read as one.
			args = append(append(args, "--", bin, "mcp"), rootArgs(t)...)
			cmd := exec.CommandContext(ctx, nt.node, args...)
			cmd.Env = append(childEnv(kmxHome), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatalf("inspector: %v", err)
			}
			if code != tc.wantExit {
				t.Fatalf("inspector exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantExit, stdout.String(), stderr.String())
			}
			// With isError the inspector prints the result, then an error
			// object; the result is the first JSON value.
			var r callResult
			if err := json.NewDecoder(&stdout).Decode(&r); err != nil {
				t.Fatalf("inspector printed no JSON result: %v\n%s", err, stdout.String())
			}
			if tc.wantVerdict != "" {
				sc := r.StructuredContent
				if sc.Verdict != tc.wantVerdict || sc.Label != "local preview" || sc.Schema != "kmx.localpreview.report/v1" {
					t.Errorf("structured report: verdict %q label %q schema %q, want verdict %q", sc.Verdict, sc.Label, sc.Schema, tc.wantVerdict)
				}
			}
			if tc.wantText != "" {
				if len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, tc.wantText) {
					t.Errorf("text content lacks %q: %+v", tc.wantText, r.Content)
				}
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// fixtureMissing is how a scenario fails when it asks for a fixture kmx
// does not offer: a test_* tool or prompt, a test:// resource, or the
// completion/subscription methods that exist only for those fixtures.
var fixtureMissing = regexp.MustCompile(`unknown tool "test_|unknown prompt "test_|Resource not found|method not found: "(completion/complete|resources/subscribe|resources/unsubscribe)"`)

// TestConformance runs the MCP conformance suite's server scenarios against
// the real binary's test-only Streamable HTTP mode on 127.0.0.1. The suite
// exits non-zero on any failure not in the committed baseline and on any
// baselined scenario that passes; this test also checks that every
// baselined scenario failed only because its fixture is missing.
func TestConformance(t *testing.T) {
	nt := installNodeTools(t)
	bin := testutil.KMX(t)
	url := startHTTPBinary(t, bin)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	results := t.TempDir()
	baseline := filepath.Join(testutil.ModuleRoot(t), "testdata", "mcp", "conformance-baseline.yml")
	cmd := exec.CommandContext(ctx, nt.node, nt.conformance, "server", "--url", url, "--expected-failures", baseline, "-o", results)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance suite: %v (a failure outside the baseline, or a baselined scenario that now passes)\n%s", err, tail(out, 6000))
	}
	if !bytes.Contains(out, []byte("=== SUMMARY ===")) {
		t.Fatalf("the suite printed no summary:\n%s", tail(out, 3000))
	}

	expected := readBaseline(t, baseline)
	seen := map[string]bool{}
	dirs, err := filepath.Glob(filepath.Join(results, "server-*", "checks.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no results under %s: %v", results, err)
	}
	for _, path := range dirs {
		scenario := scenarioName(filepath.Base(filepath.Dir(path)))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			Name         string `json:"name"`
			Status       string `json:"status"`
			ErrorMessage string `json:"errorMessage"`
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		seen[scenario] = true
		for _, c := range checks {
			if c.Status == "SUCCESS" || c.Status == "INFO" || c.Status == "SKIPPED" {
				continue
			}
			if !expected[scenario] {
				t.Errorf("%s: check %s is %s: %s", scenario, c.Name, c.Status, c.ErrorMessage)
			} else if !fixtureMissing.MatchString(c.ErrorMessage) {
				t.Errorf("baselined %s failed for another reason than a missing fixture: %s: %s", scenario, c.Name, c.ErrorMessage)
			}
		}
	}
	for name := range expected {
		if !seen[name] {
			t.Errorf("baseline names %s, which the suite did not run: remove it", name)
		}
	}
	for _, must := range []string{"server-initialize", "ping", "tools-list", "dns-rebinding-protection"} {
		if !seen[must] || expected[must] {
			t.Errorf("scenario %s must run and pass", must)
		}
	}
}

// startHTTPBinary starts kmx mcp --http 127.0.0.1:0 and returns the URL it
// announces on stderr; the process is stopped when the test ends.
func startHTTPBinary(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp", "--http", "127.0.0.1:0"}, rootArgs(t)...)...)
	cmd.Env = childEnv(testutil.PrivateDir(t))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
		}
		if first {
			close(lines)
		}
	}()
	select {
	case line, ok := <-lines:
		url := announced.FindString(line)
		if !ok || url == "" {
			t.Fatalf("kmx mcp --http announced %q, want its loopback URL", line)
		}
		return url
	case <-time.After(30 * time.Second):
		t.Fatal("kmx mcp --http announced no address within 30s")
	}
	return ""
}

// readBaseline reads the server: list of the expected-failures YAML, a
// format simple enough to read line by line.
func readBaseline(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(trimmed, ":"):
			section = strings.TrimSuffix(trimmed, ":")
		case section == "server" && strings.HasPrefix(trimmed, "- "):
			out[strings.TrimSpace(strings.TrimPrefix(trimmed, "- "))] = true
		case section == "server":
			t.Fatalf("%s: unexpected line %q", path, line)
		}
	}
	if section == "" || len(out) == 0 {
		t.Fatalf("%s has no server: list", path)
	}
	return out
}

// resultDir is the suite's "server-<scenario>-<timestamp>" folder name;
// scenario names may hold digits (json-schema-2020-12), so the timestamp is
// matched whole.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

// scenarioName takes a result folder name apart.
func scenarioName(dir string) string {
	if m := resultDir.FindStringSubmatch(dir); m != nil {
		return m[1]
	}
	return dir
}

func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return "…" + string(b[len(b)-n:])
}
