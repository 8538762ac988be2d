package journal_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

func TestClearOneRun(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, dir string) string // returns the run ID to clear
		wantErr string                                // "" means removed
		kept    bool                                  // the family must be untouched
	}{
		{"finished", func(t *testing.T, dir string) string { return finished(t, dir, journal.StatusFinished) }, "", false},
		{"cancelled", func(t *testing.T, dir string) string { return finished(t, dir, journal.StatusCancelled) }, "", false},
		{"crashed", func(t *testing.T, dir string) string {
			j := create(t, dir)
			turn(t, j, "s", 1)
			_ = j.Close()
			return j.ID()
		}, "", false},
		{"partial: companions only", func(t *testing.T, dir string) string {
			id := oldID("0000000a")
			touch(t, filepath.Join(dir, id+".db-wal"), 0o600)
			touch(t, filepath.Join(dir, id+".db-shm"), 0o600)
			return id
		}, "", false},
		{"partial: unlocked lock without a database", func(t *testing.T, dir string) string {
			id := oldID("0000000b")
			touch(t, filepath.Join(dir, id+".lock"), 0o600)
			return id
		}, "", false},
		{"running in this process", func(t *testing.T, dir string) string {
			j := create(t, dir)
			turn(t, j, "s", 1)
			return j.ID()
		}, "still executing", true},
		{"unsafe mode", func(t *testing.T, dir string) string {
			id := oldID("0000000c")
			touch(t, filepath.Join(dir, id+".db"), 0o644)
			return id
		}, "chmod 600", true},
		{"symlink", func(t *testing.T, dir string) string {
			id := oldID("0000000d")
			target := filepath.Join(t.TempDir(), "elsewhere")
			touch(t, target, 0o600)
			if err := os.Symlink(target, filepath.Join(dir, id+".db")); err != nil {
				t.Fatal(err)
			}
			return id
		}, "symbolic link", true},
		{"no such run", func(t *testing.T, dir string) string { return oldID("0000000e") }, "there is no run", false},
		{"not a run ID", func(t *testing.T, dir string) string { return "../x" }, "not a run ID", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := privateDir(t)
			writeStrays(t, dir)
			other := finished(t, dir, journal.StatusFinished)
			id := c.setup(t, dir)
			var before []string
			if journal.ValidRunID(id) {
				before = familyFiles(t, dir, id)
			}
			res, err := journal.Clear(dir, id)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("Clear: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("Clear: %v, want an error mentioning %q", err, c.wantErr)
			case c.wantErr == "" && !slices.Equal(res.Removed, []string{id}):
				t.Fatalf("removed %v, want [%s]", res.Removed, id)
			}
			if journal.ValidRunID(id) {
				after := familyFiles(t, dir, id)
				if c.kept && !slices.Equal(before, after) {
					t.Errorf("kept run changed: %v -> %v", before, after)
				}
				if !c.kept && len(after) != 0 {
					t.Errorf("left %v", after)
				}
			}
			if len(familyFiles(t, dir, other)) == 0 {
				t.Error("clearing one run removed another")
			}
			checkStrays(t, dir)
		})
	}
}

func TestClearAllKeepsExecutingAndUnrelated(t *testing.T) {
	dir := privateDir(t)
	writeStrays(t, dir)
	a := finished(t, dir, journal.StatusFinished)
	b := finished(t, dir, journal.StatusFailed)
	live := create(t, dir)
	turn(t, live, "s", 1)
	deadLock := oldID("000000aa")
	touch(t, filepath.Join(dir, deadLock+".lock"), 0o600)
	wal := oldID("000000bb")
	touch(t, filepath.Join(dir, wal+".db-wal"), 0o600)
	unsafe := oldID("000000cc")
	touch(t, filepath.Join(dir, unsafe+".db"), 0o640)

	res, err := journal.Clear(dir, "")
	var re *journal.RunningError
	if !errors.As(err, &re) || !slices.Equal(re.RunIDs, []string{live.ID()}) {
		t.Fatalf("Clear all: %v; want a RunningError naming %s", err, live.ID())
	}
	if !strings.Contains(err.Error(), "0640") {
		t.Errorf("the unsafe family is not reported: %v", err)
	}
	slices.Sort(res.Removed)
	want := []string{deadLock, wal, a, b}
	slices.Sort(want)
	if !slices.Equal(res.Removed, want) {
		t.Fatalf("removed %v, want %v", res.Removed, want)
	}
	runs, err := journal.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, r := range runs {
		left = append(left, r.ID+":"+r.Status)
	}
	slices.Sort(left)
	wantLeft := []string{unsafe + ":unsafe", live.ID() + ":running"}
	slices.Sort(wantLeft)
	if !slices.Equal(left, wantLeft) {
		t.Fatalf("left %v, want %v", left, wantLeft)
	}
	// The executing run still works and finishes normally.
	turn(t, live, "s2", 1)
	if err := live.Finish(t.Context(), journal.StatusFinished); err != nil {
		t.Fatal(err)
	}
	checkStrays(t, dir)
}
