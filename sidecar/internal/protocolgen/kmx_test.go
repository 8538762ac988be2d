package protocolgen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestKMXProtocolIsCurrent fails when shared/protocol/kmx-protocol.ts is
// not what the Go contract generates: the extension would compile against
// a stale contract.
func TestKMXProtocolIsCurrent(t *testing.T) {
	want, err := Generate(KMX())
	if err != nil {
		t.Fatal(err)
	}
	root := testutil.ModuleRoot(t)
	got, err := os.ReadFile(filepath.Join(root, KMXPath))
	if err != nil {
		t.Fatalf("%v; run: make protocol", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale; run: make protocol", KMXPath)
	}
}

// TestKMXNamesEveryCommandAndMethod: the generated constant groups list
// every command and custom method the server's contract declares, so a new
// one cannot reach the request map without a named constant.
func TestKMXNamesEveryCommandAndMethod(t *testing.T) {
	groups := map[string]map[string]bool{}
	for _, g := range KMX().Groups {
		groups[g.Name] = map[string]bool{}
		for _, e := range g.Entries {
			if v, ok := e.Value.(string); ok {
				groups[g.Name][v] = true
			}
		}
	}
	for id := range lsp.Commands() {
		if !groups["Commands"][id] {
			t.Errorf("command %s is not in the generated Commands", id)
		}
	}
	for _, m := range lsp.Methods() {
		if !groups["Methods"][m.Method] {
			t.Errorf("method %s is not in the generated Methods", m.Method)
		}
	}
	for _, m := range lsp.ClientMethods() {
		if !groups["ClientMethods"][m.Method] {
			t.Errorf("server → client method %s is not in the generated ClientMethods", m.Method)
		}
	}
}

// TestLSPDispatchIsCurrent fails when the language server's dispatch table
// of its custom methods is not what lsp.Methods() generates: a method would
// be served by a handler the contract does not name, or not at all.
func TestLSPDispatchIsCurrent(t *testing.T) {
	checkCurrent(t, LSPDispatchPath, func([]byte) ([]byte, error) { return KMXDispatch() })
}
