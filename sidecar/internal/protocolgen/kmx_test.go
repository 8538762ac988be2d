package protocolgen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestKMXProtocolIsCurrent fails when shared/protocol/kmx-protocol.ts is
// not what the Go contract generates: the extension would compile against
// a stale contract.
func TestKMXProtocolIsCurrent(t *testing.T) {
	want, err := Generate(KMX())
	if err != nil {
		t.Fatal(err)
	}
	root := moduleRoot(t)
	got, err := os.ReadFile(filepath.Join(root, KMXPath))
	if err != nil {
		t.Fatalf("%v; run: go run ./sidecar/cmd/kmx-protocolgen", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale; run: go run ./sidecar/cmd/kmx-protocolgen", KMXPath)
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
