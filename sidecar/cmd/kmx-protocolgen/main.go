// Command kmx-protocolgen writes what crosses the language boundary from
// the Go contract in sidecar/internal/lsp (contract.go and
// contract_manifest.go): shared/protocol/kmx-protocol.ts, the TypeScript
// form of the editor contract; package.json's contributes.commands and
// contributes.configuration (every other byte of package.json is kept);
// and the generated tables of docs/protocol.md. Run it from the module
// root: make protocol (or go run ./sidecar/cmd/kmx-protocolgen); -check
// reports whether the files are current without writing them.
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
	check := flag.Bool("check", false, "exit 1 if a file is stale instead of writing it")
	flag.Parse()
	stale := false
	for _, f := range []struct {
		path string
		gen  func(current []byte) ([]byte, error)
	}{
		{protocolgen.KMXPath, func([]byte) ([]byte, error) { return protocolgen.Generate(protocolgen.KMX()) }},
		{protocolgen.PackageJSONPath, protocolgen.KMXPackageJSON},
		{protocolgen.ProtocolDocPath, protocolgen.KMXProtocolDoc},
		{protocolgen.LSPDispatchPath, func([]byte) ([]byte, error) { return protocolgen.KMXDispatch() }},
	} {
		path := filepath.FromSlash(f.path)
		cur, err := os.ReadFile(path)
		if err != nil && !(os.IsNotExist(err) && (f.path == protocolgen.KMXPath || f.path == protocolgen.LSPDispatchPath)) {
			fail(2, "%v (run it from the module root)", err)
		}
		out, err := f.gen(cur)
		if err != nil {
			fail(2, "%v", err)
		}
		if bytes.Equal(cur, out) {
			continue
		}
		if *check {
			fmt.Fprintf(os.Stderr, "kmx-protocolgen: %s is stale; run: make protocol\n", path)
			stale = true
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fail(2, "%v (run it from the module root)", err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			fail(2, "%v", err)
		}
	}
	if stale {
		os.Exit(1)
	}
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kmx-protocolgen: "+format+"\n", args...)
	os.Exit(code)
}
