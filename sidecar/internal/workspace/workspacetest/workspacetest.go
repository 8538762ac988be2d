// Package workspacetest gives tests a fixture workspace's scratch copy, as
// the runner makes one: a fixture folder loaded whole, then materialized in
// a private folder, removed when the test ends.
package workspacetest

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// Scratch writes files (slash-separated path to content) as the fixture
// "fx" in a temporary folder, loads it and returns its scratch copy.
func Scratch(tb testing.TB, files map[string]string) *workspace.Workspace {
	tb.Helper()
	dir := tb.TempDir()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(dir, "fx", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[name]), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	f, err := workspace.Load(dir, "fx")
	if err != nil {
		tb.Fatal(err)
	}
	parent := tb.TempDir()
	if err := os.Chmod(parent, 0o700); err != nil {
		tb.Fatal(err)
	}
	w, err := f.Materialize(parent)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = w.Remove() })
	return w
}
