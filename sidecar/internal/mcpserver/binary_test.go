package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// childEnv is the environment of a kmx child: the parent's minus anything
// kmx reads, plus a private KMX_HOME.
func childEnv(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KMX_") {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "KMX_HOME="+home), extra...)
}

// TestBinaryStdio drives the real binary through the SDK's command
// transport. The transport keeps the child's stdin open until Close, so
// every reply arrives before the server sees end of input.
func TestBinaryStdio(t *testing.T) {
	bin := testutil.KMX(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, append([]string{"mcp"}, rootArgs(t)...)...)
	cmd.Env = childEnv(testutil.PrivateDir(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "kmx-test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "kmx" {
		t.Errorf("server name %q, want kmx", got)
	}
	tests := []struct {
		tool        string
		args        map[string]any
		wantError   bool
		wantVerdict string
		wantText    string
	}{
		{"Test", map[string]any{"file": fixture(t, "triage.agent.md")}, false, "fail", "local preview: 1 pass, 1 fail, 0 unknown — verdict fail"},
		{"Test", map[string]any{"file": fixture(t, "unknown.agent.md")}, false, "unknown", "0 pass, 0 fail, 1 unknown — verdict unknown"},
		{"Run", map[string]any{"file": fixture(t, "pass.agent.md"), "input": "Hi"}, false, "", "answer: hello"},
		{"Test", map[string]any{"file": fixture(t, "broken.agent.md")}, true, "refused", "next: fix the errors"},
		{"Explain", map[string]any{"file": fixture(t, "triage.agent.md")}, false, "", "1 retained Test failure record(s)"},
	}
	for _, tc := range tests {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s %v: %v", tc.tool, tc.args, err)
		}
		if res.IsError != tc.wantError || !strings.Contains(text(res), tc.wantText) {
			t.Errorf("%s %v: isError=%v, text:\n%s\nwant isError=%v and %q", tc.tool, tc.args, res.IsError, text(res), tc.wantError, tc.wantText)
		}
		if tc.wantVerdict != "" {
			var rep runner.Report
			decode(t, res, &rep)
			if rep.Verdict != tc.wantVerdict {
				t.Errorf("%s %v: verdict %q, want %q", tc.tool, tc.args, rep.Verdict, tc.wantVerdict)
			}
		}
	}
	// A tool that does not exist is a protocol error, not a tool result.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "Deploy", Arguments: map[string]any{}}); err == nil {
		t.Errorf("calling an unknown tool gave no protocol error")
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v (stderr: %s)", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "panic") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// TestBinaryStartupRefusals: settings that could never work stop kmx mcp
// at startup with exit 2 and a next step, before any protocol.
func TestBinaryStartupRefusals(t *testing.T) {
	bin := testutil.KMX(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"plain http to a remote host", []string{"--endpoint", "http://models.example.com/v1"}, []string{"--endpoint", "next: "}},
		{"key-env without endpoint", []string{"--key-env", "OPENAI_API_KEY"}, []string{"--key-env", "--endpoint is not set"}},
		{"key-env that is not a name", []string{"--endpoint", "https://models.example.com/v1", "--key-env", "not a name"}, []string{"not a valid environment variable name"}},
		{"judge key-env without judge endpoint", []string{"--judge-key-env", "JUDGE_KEY"}, []string{"--judge-endpoint is not set"}},
		{"http on every interface", []string{"--http", "0.0.0.0:0"}, []string{"not a loopback IP", "next: use --http 127.0.0.1:0"}},
		{"a file argument", []string{"x.agent.md"}, []string{"unexpected argument", "next: "}},
		{"an unknown flag", []string{"--model", "fake"}, []string{"flag provided but not defined"}},
		{"a root that does not exist", []string{"--root", "/nonexistent-kmx-root"}, []string{"root /nonexistent-kmx-root", "next: name an existing folder"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"mcp"}, tc.args...)...)
			cmd.Env = childEnv(testutil.PrivateDir(t))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit: %v, want code 2; stderr: %s", err, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout (the protocol stream) got %q", stdout.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// TestBinaryRawStdio speaks newline-delimited JSON-RPC to the binary by
// hand: malformed requests get protocol errors, a well-formed call gets a
// result, stdin stays open until every reply has arrived (the SDK stops
// answering once stdin closes), and closing it then ends kmx mcp with exit 0.
func TestBinaryRawStdio(t *testing.T) {
	bin := testutil.KMX(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"mcp"}, rootArgs(t)...)...)
	cmd.Env = childEnv(testutil.PrivateDir(t))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	file, _ := json.Marshal(fixture(t, "pass.agent.md"))
	requests := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"Test","arguments":{"file":` + string(file) + `}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"Test","arguments":"not an object"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"Publish","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"not params"}`,
	}
	for _, r := range requests {
		if _, err := io.WriteString(stdin, r+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	type reply struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	replies := map[int]reply{}
	dec := json.NewDecoder(stdout)
	for len(replies) < 5 {
		var r reply
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("after %d replies: %v (stderr: %s)", len(replies), err, stderr.String())
		}
		if r.ID != 0 {
			replies[r.ID] = r
		}
	}
	if r := replies[2]; r.Error != nil || !bytes.Contains(r.Result, []byte(`"verdict":"pass"`)) {
		t.Errorf("Test call: error %+v, result %s", r.Error, r.Result)
	}
	for _, id := range []int{3, 4, 5} {
		if replies[id].Error == nil {
			t.Errorf("request %d (malformed) got a result, want a protocol error: %s", id, replies[id].Result)
		}
	}
	// Every reply is in: now end the input, and kmx mcp ends cleanly.
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("kmx mcp after stdin closed: %v (stderr: %s)", err, stderr.String())
	}
}
