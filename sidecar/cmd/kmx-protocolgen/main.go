// Command kmx-protocolgen writes shared/protocol/kmx-protocol.ts, the
// TypeScript form of the editor contract in sidecar/internal/lsp/contract.go.
// Run it from the module root: go run ./sidecar/cmd/kmx-protocolgen
// (-check reports whether the file is current without writing it).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kmxdev/kmx/sidecar/internal/protocolgen"
)

func main() {
	check := flag.Bool("check", false, "exit 1 if the file is stale instead of writing it")
	flag.Parse()
	out, err := protocolgen.Generate(protocolgen.KMX())
	if err != nil {
		fmt.Fprintf(os.Stderr, "kmx-protocolgen: %v\n", err)
		os.Exit(2)
	}
	path := filepath.FromSlash(protocolgen.KMXPath)
	if *check {
		cur, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(cur, out) {
			fmt.Fprintf(os.Stderr, "kmx-protocolgen: %s is stale; run: go run ./sidecar/cmd/kmx-protocolgen\n", path)
			os.Exit(1)
		}
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "kmx-protocolgen: %v (run it from the module root)\n", err)
		os.Exit(2)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "kmx-protocolgen: %v\n", err)
		os.Exit(2)
	}
}
