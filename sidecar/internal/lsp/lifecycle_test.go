package lsp_test

import (
	"encoding/json"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

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
	cmds := caps["executeCommandProvider"].(map[string]any)["commands"].([]any)
	if len(cmds) != len(lsp.Commands()) {
		t.Errorf("commands = %v, want the %d of the contract", cmds, len(lsp.Commands()))
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
