package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func internalMeta() RunMeta {
	return RunMeta{KmxVersion: "0.0.0-test", AgentID: "greeter", AgentRevision: "sha256:abc", Command: "test"}
}

func privateTemp(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func finishedRun(t *testing.T, dir string) string {
	t.Helper()
	j, err := Create(context.Background(), dir, internalMeta())
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(context.Background(), StatusFinished); err != nil {
		t.Fatal(err)
	}
	return j.ID()
}

// TestRemovalRechecksIdentity swaps a family file between discovery and
// removal: the swapped file is refused and kept, not removed in the
// original's name.
func TestRemovalRechecksIdentity(t *testing.T) {
	cases := []struct {
		name string
		swap func(t *testing.T, p string)
	}{
		{"replaced by another file", func(t *testing.T, p string) {
			// Written beside it and renamed over it: had the original been
			// removed first, the file system could hand its inode number to
			// the new file, and no identity check could tell them apart.
			if err := os.WriteFile(p+".new", []byte("someone else's"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by a symlink", func(t *testing.T, p string) {
			target := filepath.Join(t.TempDir(), "target")
			if err := os.WriteFile(target, []byte("someone else's"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := privateTemp(t)
			id := finishedRun(t, dir)
			fams, err := discover(dir)
			if err != nil || len(fams) != 1 {
				t.Fatalf("discover: %v %v", fams, err)
			}
			db := filepath.Join(dir, id+".db")
			c.swap(t, db)
			err = removeFamily(dir, fams[0], false)
			var ce *ChangedError
			if err == nil || !errors.As(err, &ce) && !strings.Contains(err.Error(), "symbolic link") {
				t.Fatalf("removeFamily after a swap: %v", err)
			}
			if _, err := os.Lstat(db); err != nil {
				t.Fatalf("the swapped-in file was removed: %v", err)
			}
		})
	}
}

func TestFlushFailureReportsUncertainty(t *testing.T) {
	dir := privateTemp(t)
	id := finishedRun(t, dir)
	flushErr := errors.New("input/output error")
	res, err := clearRuns(dir, "", func(string) error { return flushErr })
	var ue *UncertainError
	if !errors.As(err, &ue) || !errors.Is(err, flushErr) {
		t.Fatalf("clear with a failing flush: %v", err)
	}
	if !strings.Contains(err.Error(), "may still exist") {
		t.Errorf("message claims absence: %v", err)
	}
	if len(res.Removed) != 1 || res.Removed[0] != id {
		t.Errorf("removed %v", res.Removed)
	}
}

// TestSameLockNoticesARemovedLockFile: the lock-path check Create
// runs after locking fails once the path names another file or none.
func TestSameLockNoticesARemovedLockFile(t *testing.T) {
	dir := privateTemp(t)
	p := filepath.Join(dir, "20200101T000000.000000000Z-00000001.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := sameLock(f); err != nil {
		t.Fatalf("sameLock on its own path: %v", err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := sameLock(f); err == nil {
		t.Fatal("sameLock accepted a removed lock file")
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var ce *ChangedError
	if err := sameLock(f); !errors.As(err, &ce) {
		t.Fatalf("sameLock on a replaced lock file: %v", err)
	}
}
