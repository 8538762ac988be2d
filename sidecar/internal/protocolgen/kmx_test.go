package protocolgen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

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
		t.Fatalf("%v; run: go run ./sidecar/cmd/kmx-protocolgen", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale; run: go run ./sidecar/cmd/kmx-protocolgen", KMXPath)
	}
}
