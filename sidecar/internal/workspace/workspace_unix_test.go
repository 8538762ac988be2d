//go:build unix

package workspace

import (
	"path/filepath"
	"syscall"
	"testing"
)

func TestLoadRefusesADeviceOrPipe(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, filepath.Join(dir, "fixture"), sampleFixture)
	if err := syscall.Mkfifo(filepath.Join(dir, "fixture", "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir, "fixture")
	wantRefused(t, err, "pipe, which is not a regular file")
}

func TestToolsRefuseADeviceOrPipeInTheCopy(t *testing.T) {
	_, _, w := setup(t)
	if err := syscall.Mkfifo(filepath.Join(w.Dir(), "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantToolError(t, call(t, w, ReadFile, `{"filePath": "pipe"}`), "not a regular file or folder")
	wantToolError(t, call(t, w, ReplaceString, `{"filePath": "pipe", "oldString": "a", "newString": "b"}`), "not a regular file")
	// A search walks past it without opening it (opening a pipe would block).
	wantOK(t, call(t, w, GrepSearch, `{"query": "Add", "isRegexp": false}`), "calc/add.go")
	ch, err := w.Changes()
	if err != nil || len(ch) != 1 || !ch[0].NotRegular || ch[0].Kind != Added {
		t.Fatalf("changes %+v, %v", ch, err)
	}
}
