//go:build unix

package journal_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// Under umask 0 nothing narrows modes by accident: every file in the journal
// family, including the -wal and -shm SQLite makes itself, must be private
// because kmx made it so.
func TestJournalFamilyIsPrivate(t *testing.T) {
	testutil.Umask0(t)
	root := filepath.Join(t.TempDir(), "state")
	dir, err := journal.EnsureDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if dir != journal.Dir(root) {
		t.Fatalf("EnsureDir = %q, Dir = %q", dir, journal.Dir(root))
	}
	j := create(t, dir)
	turn(t, j, "s", 1)
	want := map[string]fs.FileMode{
		root:                                 0o700,
		filepath.Join(root, "local-preview"): 0o700,
		dir:                                  0o700,
		j.Path():                             0o600,
		j.Path() + "-wal":                    0o600,
		j.Path() + "-shm":                    0o600,
		filepath.Join(dir, j.ID()+".lock"):   0o600,
	}
	for p, m := range want {
		if got := testutil.Mode(t, p); got != m {
			t.Errorf("%s has mode %04o, want %04o", p, got, m)
		}
	}
	if err := j.Finish(context.Background(), journal.StatusFinished); err != nil {
		t.Fatal(err)
	}
	// Reading materializes -wal and -shm before SQLite can: private too.
	r, err := journal.Open(context.Background(), dir, j.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Records(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"-wal", "-shm"} {
		if got := testutil.Mode(t, j.Path()+c); got != 0o600 {
			t.Errorf("%s%s after Open has mode %04o, want 0600", j.Path(), c, got)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	tests := []struct {
		name    string
		runID   func(id string) string
		setup   func(t *testing.T, dir, id string)
		problem string // in an UnsafeError, or the plain message
		unsafe  bool
	}{
		{"path traversal", func(id string) string { return "../" + id }, nil, "not a run ID", false},
		{"missing run", func(string) string { return "20260101T000000.000000000Z-00000000" }, nil, "no such run", false},
		{"broader database", nil, func(t *testing.T, dir, id string) { chmod(t, filepath.Join(dir, id+".db"), 0o644) }, "mode 0644", true},
		{"broader wal", nil, func(t *testing.T, dir, id string) {
			if err := os.WriteFile(filepath.Join(dir, id+".db-wal"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			chmod(t, filepath.Join(dir, id+".db-wal"), 0o666)
		}, "mode 0666", true},
		{"symlinked database", nil, func(t *testing.T, dir, id string) {
			db := filepath.Join(dir, id+".db")
			if err := os.Rename(db, db+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(db+".real", db); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link", true},
		{"broader folder", nil, func(t *testing.T, dir, id string) { chmod(t, dir, 0o755) }, "mode 0755", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := privateDir(t)
			j := create(t, dir)
			turn(t, j, "s", 1)
			if err := j.Finish(context.Background(), journal.StatusFinished); err != nil {
				t.Fatal(err)
			}
			id := j.ID()
			if tt.runID != nil {
				id = tt.runID(id)
			}
			if tt.setup != nil {
				tt.setup(t, dir, j.ID())
			}
			before := names(t, dir)
			r, err := journal.Open(context.Background(), dir, id)
			if err == nil {
				_ = r.Close()
				t.Fatal("Open succeeded")
			}
			var ue *state.UnsafeError
			if tt.unsafe != errors.As(err, &ue) {
				t.Fatalf("Open = %v; UnsafeError = %v, want %v", err, !tt.unsafe, tt.unsafe)
			}
			if !strings.Contains(err.Error(), tt.problem) {
				t.Fatalf("Open = %v, want it to mention %q", err, tt.problem)
			}
			if after := names(t, dir); after != before {
				t.Fatalf("a refused Open changed the folder: %s -> %s", before, after)
			}
		})
	}
}

func chmod(t *testing.T, p string, m fs.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, dir string) string {
	t.Helper()
	return strings.Join(testutil.DirNames(t, dir), ",")
}
