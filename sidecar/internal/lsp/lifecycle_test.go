package lsp_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

func TestRequestsBeforeInitializeAreRefused(t *testing.T) {
	for _, method := range []string{"textDocument/codeLens", lsp.MethodExamples, lsp.MethodTest, "shutdown", "textDocument/hover"} {
		t.Run(method, func(t *testing.T) {
			c := startServer(t, lsp.Options{})
			err := c.call(method, map[string]any{"textDocument": map[string]any{"uri": "file:///x.agent.md"}}, nil)
			if got := rpcCode(err); got != jsonrpc2.ServerNotInitialized {
				t.Fatalf("code = %d (%v), want ServerNotInitialized -32002", got, err)
			}
		})
	}
}

func TestInitializeAdvertisesIncrementalSyncLensesAndCommands(t *testing.T) {
	c := startServer(t, lsp.Options{Version: "test"})
	res := c.initialize(map[string]any{"protocolVersion": lsp.ProtocolVersion})
	caps := res["capabilities"].(map[string]any)
	sync := caps["textDocumentSync"].(map[string]any)
	if sync["change"] != float64(2) || sync["openClose"] != true {
		t.Errorf("textDocumentSync = %v, want openClose and change 2 (incremental)", sync)
	}
	if caps["codeLensProvider"] == nil {
		t.Error("no codeLensProvider")
	}
	// The extension registers the kmx.* commands itself; advertising them
	// would have the client register them a second time.
	if p, ok := caps["executeCommandProvider"]; ok {
		t.Errorf("executeCommandProvider = %v, want none", p)
	}
	if got := caps["experimental"].(map[string]any)["kmxProtocolVersion"]; got != lsp.ProtocolVersion {
		t.Errorf("kmxProtocolVersion = %v", got)
	}
	if err := c.call("initialize", map[string]any{"capabilities": map[string]any{}}, nil); rpcCode(err) != jsonrpc2.InvalidRequest {
		t.Errorf("second initialize: %v, want InvalidRequest", err)
	}
}

func TestInitializeRefusesAnotherProtocolVersion(t *testing.T) {
	c := startServer(t, lsp.Options{})
	err := c.call("initialize", map[string]any{"capabilities": map[string]any{}, "initializationOptions": map[string]any{"protocolVersion": "kmx.lsp/v0"}}, nil)
	if rpcCode(err) != jsonrpc2.InvalidParams {
		t.Fatalf("err = %v, want InvalidParams naming both versions", err)
	}
	// Refused means still uninitialized.
	if err := c.call(lsp.MethodExamples, map[string]any{"uri": "file:///x"}, nil); rpcCode(err) != jsonrpc2.ServerNotInitialized {
		t.Fatalf("after a refused initialize: %v, want ServerNotInitialized", err)
	}
}

func TestShutdownThenExit(t *testing.T) {
	tests := []struct {
		name     string
		shutdown bool
		want     int
	}{
		{"exit after shutdown", true, lsp.ExitOK},
		{"exit without shutdown", false, lsp.ExitNoShut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startServer(t, lsp.Options{})
			c.initialize(nil)
			if tt.shutdown {
				c.mustCall("shutdown", nil, nil)
				err := c.call(lsp.MethodExamples, map[string]any{"uri": "file:///x"}, nil)
				if rpcCode(err) != jsonrpc2.InvalidRequest {
					t.Fatalf("request after shutdown: %v, want InvalidRequest", err)
				}
			}
			c.notify("exit", nil)
			select {
			case code := <-c.code:
				if code != tt.want {
					t.Fatalf("exit code %d, want %d", code, tt.want)
				}
				c.code <- code // for cleanup
			case <-time.After(waitFor):
				t.Fatal("server did not exit")
			}
		})
	}
}

func TestUnknownMethodsAnswerMethodNotFound(t *testing.T) {
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	for _, method := range []string{"textDocument/hover", "kmx/nothing"} {
		err := c.call(method, map[string]any{}, nil)
		if rpcCode(err) != jsonrpc2.MethodNotFound {
			t.Errorf("%s: %v, want MethodNotFound", method, err)
		}
	}
	// An unknown notification is ignored; the server still answers.
	c.notify("$/unknownThing", map[string]any{})
	var res json.RawMessage
	c.mustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": "untitled:Untitled-1"}}, &res)
	if string(res) != "[]" {
		t.Errorf("lenses for a document that is not open = %s, want []", res)
	}
}

// panickyParse is agentfile.Parse, except that a text holding PANIC breaks
// an invariant.
func panickyParse(name string, src []byte) agentfile.Result {
	if strings.Contains(string(src), "PANIC") {
		panic("parser invariant broken")
	}
	return agentfile.Parse(name, src)
}

// TestABrokenInvariantIsReportedNotFatal makes the parser panic inside a
// request: the request gets InternalError and the server keeps serving.
func TestABrokenInvariantIsReportedNotFatal(t *testing.T) {
	c := startServer(t, lsp.Options{Parse: panickyParse})
	c.initialize(nil)
	// Not open, so the request parses the file itself (no cached result).
	broken := fileURI(writeAgent(t, "p.agent.md", "PANIC"))
	err := c.call(lsp.MethodExamples, lsp.DocumentParams{URI: broken}, nil)
	if rpcCode(err) != jsonrpc2.InternalError {
		t.Fatalf("err = %v, want InternalError", err)
	}
	var ex lsp.ExamplesResult
	c.mustCall(lsp.MethodExamples, lsp.DocumentParams{URI: fileURI(writeAgent(t, "g.agent.md", greeter))}, &ex)
	if len(ex.Examples) != 3 {
		t.Fatalf("after the panic: %+v", ex)
	}
}

// TestAParserPanicWhileTypingIsAWarning: the same panic in the background
// diagnose loop publishes a Warning and the server lives on.
func TestAParserPanicWhileTypingIsAWarning(t *testing.T) {
	c := startServer(t, lsp.Options{Parse: panickyParse})
	c.initialize(nil)
	uri := "file:///work/p.agent.md"
	c.open(uri, 1, "PANIC")
	d, _ := c.diagnosticsFor(0, uri, 1)
	if len(d.Diagnostics) != 1 || d.Diagnostics[0].Severity != 2 || d.Diagnostics[0].Code != "kmx-internal" {
		t.Fatalf("diagnostics = %+v, want one kmx-internal Warning", d.Diagnostics)
	}
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": 2},
		"contentChanges": []map[string]any{{"text": greeter}},
	})
	if d, _ = c.diagnosticsFor(0, uri, 2); len(d.Diagnostics) != 0 {
		t.Fatalf("after the fix: %+v", d.Diagnostics)
	}
}
