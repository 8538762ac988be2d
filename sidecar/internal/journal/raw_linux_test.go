package journal_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// openFilesUnder counts this process's open descriptors of files in dir.
func openFilesUnder(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(p, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// TestFinishAndCloseReleaseEveryFile: the statements prepared on the
// journal's connections (writer, reader, checkpointer) are closed with
// them, so SQLite closes the database, -wal and -shm files; a statement
// left open would keep them open (SQLite defers the close until its last
// statement is finalized).
func TestFinishAndCloseReleaseEveryFile(t *testing.T) {
	ctx := context.Background()
	dir := privateDir(t)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	j := create(t, dir)
	// Enough commits (60 turns of 5) that a checkpoint connection is
	// opened beside the writer too.
	for i := range 60 {
		turn(t, j, "s1", i+1)
	}
	if _, err := j.Records(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	r, err := journal.Open(ctx, dir, j.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Records(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if n := openFilesUnder(t, dir); n < 3 {
		t.Fatalf("%d files open while the journal is written and read, want the database family and the lock", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(ctx, journal.StatusFinished); err != nil {
		t.Fatal(err)
	}
	if n := openFilesUnder(t, dir); n != 0 {
		t.Fatalf("%d files in the journal folder still open after Finish and Close", n)
	}
	if fi, err := os.Stat(j.Path() + "-wal"); err == nil && fi.Size() != 0 {
		t.Fatalf("the WAL holds %d bytes after Finish's checkpoint", fi.Size())
	}
}
