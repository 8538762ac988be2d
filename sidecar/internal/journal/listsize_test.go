package journal_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// Issue 31 item 17: kmx journal list showed 378 KiB for a crashed run and
// --json, a moment later, 57,344 bytes. The first listing counted the
// run's write-ahead log, which its own read then folded into the database
// and removed. A listing reports the files as it leaves them, so every
// listing of the run shows one size and names only files that exist.
func TestJournalListShowsOneSizeForACrashedRunNotTheLogItsReadFolded(t *testing.T) {
	dir := privateDir(t)
	h := startHelper(t, "append", dir)
	for {
		seq, err := strconv.ParseInt(strings.TrimPrefix(h.line(t), "seq "), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if seq >= 300 {
			break
		}
	}
	h.kill()
	if _, err := os.Stat(filepath.Join(dir, h.id+".db-wal")); err != nil {
		t.Fatalf("the killed run left no write-ahead log (%v): the test needs one", err)
	}
	first, err := journal.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := journal.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("listed %d then %d runs, want 1", len(first), len(second))
	}
	a, b := first[0], second[0]
	if a.Status != journal.RunCrashed {
		t.Fatalf("status %q, want %q", a.Status, journal.RunCrashed)
	}
	if a.Size != b.Size || !slices.Equal(a.Files, b.Files) {
		t.Errorf("one crashed run listed twice: %d bytes %v, then %d bytes %v", a.Size, a.Files, b.Size, b.Files)
	}
	var onDisk int64
	var names []string
	for _, n := range testutil.DirNames(t, dir) {
		fi, err := os.Lstat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		onDisk += fi.Size()
		names = append(names, n)
	}
	slices.Sort(names)
	listed := slices.Sorted(slices.Values(a.Files))
	if a.Size != onDisk || !slices.Equal(listed, names) {
		t.Errorf("listed %d bytes in %v; the folder holds %d bytes in %v", a.Size, listed, onDisk, names)
	}
}
