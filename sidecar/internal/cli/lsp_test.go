package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLSPAnswersABadBindingFileAtInitialize: kmx lsp --tool-bindings with
// a file that does not hold keeps serving and answers initialize with the
// refusal and its next step, so the editor shows it once instead of
// restarting a server that exits at once.
func TestLSPAnswersABadBindingFileAtInitialize(t *testing.T) {
	bindings := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(bindings, []byte(`{"schemaVersion":"kmx.local-tools/v1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		done <- Main(ctx, []string{"lsp", "--tool-bindings", bindings}, Env{Stdin: inR, Stdout: outW, Stderr: &stderr, Getenv: func(string) string { return "" }})
		_ = outW.Close()
	}()
	// Writes never wait for a reader: a server that exited reads nothing.
	send := func(msg string) {
		go func() { _, _ = fmt.Fprintf(inW, "Content-Length: %d\r\n\r\n%s", len(msg), msg) }()
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`)
	r := textproto.NewReader(bufio.NewReader(outR))
	h, err := r.ReadMIMEHeader()
	if err != nil {
		t.Fatalf("no answer to initialize: %v (stderr %s)", err, stderr.String())
	}
	n, err := strconv.Atoi(h.Get("Content-Length"))
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.R, body); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Error == nil || !strings.Contains(resp.Error.Message, "kmx lsp: --tool-bindings") || !strings.Contains(resp.Error.Message, "\nnext: ") {
		t.Fatalf("initialize answered %s, want the binding refusal and its next step", body)
	}
	send(`{"jsonrpc":"2.0","method":"exit"}`)
	_ = inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("kmx lsp did not stop after exit")
	}
	if !strings.Contains(stderr.String(), "refusing to initialize") {
		t.Errorf("the log does not say why: %s", stderr.String())
	}
}
