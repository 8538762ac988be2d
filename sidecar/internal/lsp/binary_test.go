package lsp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// buildKMX builds the real kmx binary into dir.
func buildKMX(tb testing.TB, dir string) string {
	tb.Helper()
	bin := filepath.Join(dir, "kmx")
	cmd := exec.Command("go", "build", "-o", bin, "./sidecar/cmd/kmx")
	cmd.Dir = moduleRootTB(tb)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is a running `kmx lsp` with a jsonrpc2 client on its stdio.
type process struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	conn   jsonrpc2.Conn
	stderr *bytes.Buffer
	client *client
}

type pipes struct {
	io.Reader
	io.WriteCloser
}

func startProcess(tb testing.TB, bin, home string) *process {
	tb.Helper()
	cmd := exec.Command(bin, "lsp", "--stdio")
	cmd.Env = []string{"KMX_HOME=" + home, "PATH=" + os.Getenv("PATH")}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p := &process{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() { p.err = cmd.Wait(); close(p.done) }()
	p.conn = jsonrpc2.NewConn(jsonrpc2.NewStream(pipes{stdout, stdin}))
	p.client = &client{t: tb, conn: p.conn, signal: make(chan struct{}, 1)}
	p.conn.Go(context.Background(), p.client.handle)
	return p
}

func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func moduleRootTB(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

// TestBinaryOverStdio drives the real `kmx lsp` process once: initialize,
// open, diagnostics arrive, shutdown, exit with code 0, and nothing but
// protocol on stdout (the jsonrpc2 reader would fail on anything else).
func TestBinaryOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kmx binary; run without -short")
	}
	bin := buildKMX(t, t.TempDir())
	p := startProcess(t, bin, privateHome(t))
	defer p.kill()
	c := p.client

	res := c.initialize(nil)
	if info := res["serverInfo"].(map[string]any); info["name"] != "kmx" {
		t.Fatalf("serverInfo = %v", info)
	}
	uri := "file:///nowhere/draft.agent.md"
	c.open(uri, 1, unfinished)
	d, _ := c.diagnosticsFor(0, uri, 1)
	if len(d.Diagnostics) == 0 || d.Diagnostics[0].Severity != 3 {
		t.Fatalf("diagnostics = %+v, want Information for the unfinished tail", d.Diagnostics)
	}
	c.mustCall("shutdown", nil, nil)
	c.notify("exit", nil)

	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("kmx lsp exited with %v after shutdown+exit, want 0\nstderr:\n%s", p.err, p.stderr)
		}
	case <-time.After(waitFor):
		t.Fatal("kmx lsp did not exit after exit")
	}
	if !strings.Contains(p.stderr.String(), "initialized") {
		t.Errorf("the log (stderr) lacks the initialize line:\n%s", p.stderr)
	}
	raw, _ := json.Marshal(d)
	if strings.Contains(p.stderr.String(), string(raw)) {
		t.Error("protocol payloads leaked into the log")
	}
}
