package agentfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReadFileCapsEveryFront(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.agent.md")
	if err := os.WriteFile(ok, make([]byte, MaxFileSize), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(ok); err != nil || len(b) != MaxFileSize {
		t.Fatalf("a file of exactly 8 MiB: %d bytes, %v", len(b), err)
	}
	big := filepath.Join(dir, "big.agent.md")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(big)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Path != big || tl.NextStep() == "" {
		t.Fatalf("err = %v, want TooLargeError", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.agent.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
