package journal_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// strays are files a user or another tool may leave in the journal folder;
// none is a kmx run family, so none may ever be listed, counted or removed.
var strays = []string{
	"notes.txt",
	"x.db",
	"20261130T162341.123456789Z-0a1b2c3.db", // one hex digit short
	"20261130T162341.123456789Z-0a1b2c3d.bak", // a known ID, unknown suffix
	"20261130T162341.123456789Z-0A1B2C3D.db",  // upper-case hex is not an ID
}

func writeStrays(t *testing.T, dir string) {
	t.Helper()
	for _, s := range strays {
		if err := os.WriteFile(filepath.Join(dir, s), []byte("not kmx's"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func checkStrays(t *testing.T, dir string) {
	t.Helper()
	for _, s := range strays {
		b, err := os.ReadFile(filepath.Join(dir, s))
		if err != nil || string(b) != "not kmx's" {
			t.Errorf("stray %s was touched: %q, %v", s, b, err)
		}
	}
}

// finished creates a run and finishes it with status.
func finished(t *testing.T, dir, status string) string {
	t.Helper()
	j, err := journal.Create(context.Background(), dir, testMeta())
	if err != nil {
		t.Fatal(err)
	}
	turn(t, j, "s1", 1)
	if err := j.Finish(context.Background(), status); err != nil {
		t.Fatal(err)
	}
	return j.ID()
}

// oldID is a run ID from 2020, older than any grace period.
func oldID(suffix string) string { return "20200101T000000.000000000Z-" + suffix }

func touch(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, nil, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func TestListReportsEveryStatusAndNothingElse(t *testing.T) {
	dir := privateDir(t)
	writeStrays(t, dir)
	fin := finished(t, dir, journal.StatusFinished)
	can := finished(t, dir, journal.StatusCancelled)
	fail := finished(t, dir, journal.StatusFailed)

	crashed := create(t, dir)
	turn(t, crashed, "s1", 1)
	if err := crashed.Close(); err != nil { // no status recorded: a crash
		t.Fatal(err)
	}
	running := create(t, dir)
	turn(t, running, "s1", 1)

	partialWAL := oldID("00000001") // only companions: an interrupted clear
	touch(t, filepath.Join(dir, partialWAL+".db-wal"), 0o600)
	touch(t, filepath.Join(dir, partialWAL+".db-shm"), 0o600)
	deadLock := oldID("00000002") // died between its lock and its database
	touch(t, filepath.Join(dir, deadLock+".lock"), 0o600)
	unsafe := oldID("00000003")
	touch(t, filepath.Join(dir, unsafe+".db"), 0o644)
	young := time.Now().UTC().Format("20060102T150405.000000000Z") + "-00000004"
	touch(t, filepath.Join(dir, young+".lock"), 0o600)

	before := testutil.DirNames(t, dir)
	runs, err := journal.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		fin: "finished", can: "cancelled", fail: "failed",
		crashed.ID(): "crashed-unfinished", running.ID(): "running",
		partialWAL: "partial", deadLock: "partial", unsafe: "unsafe", young: "running",
	}
	if len(runs) != len(want) {
		t.Fatalf("listed %d runs, want %d: %+v", len(runs), len(want), runs)
	}
	for i, r := range runs {
		if i > 0 && runs[i-1].ID >= r.ID {
			t.Errorf("runs not oldest first: %s before %s", runs[i-1].ID, r.ID)
		}
		if got := want[r.ID]; r.Status != got {
			t.Errorf("%s: status %q, want %q (%s)", r.ID, r.Status, got, r.Problem)
		}
		if r.Created.IsZero() || !strings.HasPrefix(r.ID, r.Created.Format("20060102T150405")) {
			t.Errorf("%s: created %v", r.ID, r.Created)
		}
		hasDB := slices.Contains(r.Files, r.ID+".db")
		if hasDB && r.Status != "unsafe" && (r.AgentID != "greeter" || r.AgentRevision != "sha256:abc" || r.Command != "test" || r.Size <= 0) {
			t.Errorf("%s: meta %+v", r.ID, r)
		}
		if (r.Status == "partial" || r.Status == "unsafe") && r.Problem == "" {
			t.Errorf("%s: %s without a problem", r.ID, r.Status)
		}
	}
	// Listing reads meta only: it leaves no new file behind.
	if after := testutil.DirNames(t, dir); !slices.Equal(before, after) {
		t.Errorf("List changed the folder:\nbefore %v\nafter  %v", before, after)
	}
	checkStrays(t, dir)
}

func TestListRefusesAnUnsafeFolder(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T) string
		want  string
	}{
		{"broad mode", func(t *testing.T) string {
			d := privateDir(t)
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
			return d
		}, "chmod 700"},
		{"symlink", func(t *testing.T) string {
			d := privateDir(t)
			l := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(d, l); err != nil {
				t.Fatal(err)
			}
			return l
		}, "symbolic link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.setup(t)
			for name, call := range map[string]func() error{
				"List":   func() error { _, err := journal.List(dir); return err },
				"Retain": func() error { _, err := journal.Retain(dir, 1); return err },
				"Clear":  func() error { _, err := journal.Clear(dir, ""); return err },
			} {
				if err := call(); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: %v, want a refusal mentioning %q", name, err, c.want)
				}
			}
		})
	}
}

func TestRetainKeepsNewestAndNeverAnExecutingRun(t *testing.T) {
	cases := []struct {
		name            string
		running, done   int
		keep            int
		wantRemoved     int
		wantRunsAfter   int
		wantRunningKept bool
	}{
		{"under the limit", 0, 5, 20, 0, 5, true},
		{"at the limit", 0, 20, 20, 0, 20, true},
		{"over by three", 0, 23, 20, 3, 20, true},
		{"oldest are running", 2, 23, 20, 5, 20, true},
		{"everything old is running", 3, 3, 1, 3, 3, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := privateDir(t)
			writeStrays(t, dir)
			var live []*journal.Journal
			for range c.running {
				live = append(live, create(t, dir))
			}
			var done []string
			for range c.done {
				done = append(done, finished(t, dir, journal.StatusFinished))
			}
			res, err := journal.Retain(dir, c.keep)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Removed) != c.wantRemoved || res.Runs != c.wantRunsAfter {
				t.Fatalf("removed %d (%v), runs %d; want %d, %d", len(res.Removed), res.Removed, res.Runs, c.wantRemoved, c.wantRunsAfter)
			}
			// The oldest finished runs went, in order.
			if !slices.Equal(res.Removed, done[:c.wantRemoved]) {
				t.Errorf("removed %v, want the oldest %v", res.Removed, done[:c.wantRemoved])
			}
			for _, j := range live {
				if _, err := os.Stat(j.Path()); err != nil {
					t.Errorf("executing run %s lost its journal: %v", j.ID(), err)
				}
				if _, err := j.Append(context.Background(), journal.Record{SessionID: "after", Kind: journal.KindSessionPlaced, Version: 1, Payload: []byte("{}")}); err != nil {
					t.Errorf("executing run %s cannot append after retention: %v", j.ID(), err)
				}
			}
			runs, err := journal.List(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != c.wantRunsAfter {
				t.Errorf("List shows %d runs, want %d", len(runs), c.wantRunsAfter)
			}
			for _, id := range res.Removed {
				for _, s := range []string{".db", ".db-wal", ".db-shm", ".lock"} {
					if _, err := os.Lstat(filepath.Join(dir, id+s)); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s%s survived its removal: %v", id, s, err)
					}
				}
			}
			checkStrays(t, dir)
		})
	}
}

// TestRetainNeverDeletesARunLockedByAnotherProcess holds a run's lock in a
// helper process: retention over it keeps every file; once the process is
// killed (the kernel drops the lock) the crashed run is an ordinary
// candidate.
func TestRetainNeverDeletesARunLockedByAnotherProcess(t *testing.T) {
	dir := privateDir(t)
	h := startHelper(t, "hold", dir)
	if got := h.line(t); got != "ready" {
		t.Fatalf("helper said %q", got)
	}
	for range 3 {
		finished(t, dir, journal.StatusFinished)
	}
	before := familyFiles(t, dir, h.id)
	res, err := journal.Retain(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(res.Removed, h.id) || res.Runs != 1 || len(res.Removed) != 3 {
		t.Fatalf("retention over a locked run: %+v", res)
	}
	if after := familyFiles(t, dir, h.id); !slices.Equal(before, after) {
		t.Fatalf("the locked run's files changed: %v -> %v", before, after)
	}
	_, err = journal.Clear(dir, h.id)
	var re *journal.RunningError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "still executing") {
		t.Fatalf("Clear of a locked run: %v", err)
	}
	h.kill()
	newest := finished(t, dir, journal.StatusFinished)
	res, err = journal.Retain(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{h.id}) || res.Runs != 1 || len(familyFiles(t, dir, newest)) == 0 {
		t.Fatalf("the crashed run was kept after its process died: %+v", res)
	}
	if left := familyFiles(t, dir, h.id); len(left) != 0 {
		t.Fatalf("crashed run left %v", left)
	}
}

func familyFiles(t *testing.T, dir, id string) []string {
	t.Helper()
	var out []string
	for _, n := range testutil.DirNames(t, dir) {
		if strings.HasPrefix(n, id) {
			out = append(out, n)
		}
	}
	return out
}

// BenchmarkList20 is List alone over 20 finished runs of 100 turns each:
// the in-process share of kmx journal list.
func BenchmarkList20(b *testing.B) {
	dir := b.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for range journal.KeepRuns {
		j, err := journal.Create(ctx, dir, testMeta())
		if err != nil {
			b.Fatal(err)
		}
		for s := range 100 {
			turn(b, j, "s"+strconv.Itoa(s), 1)
		}
		if err := j.Finish(ctx, journal.StatusFinished); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		runs, err := journal.List(dir)
		if err != nil || len(runs) != journal.KeepRuns {
			b.Fatalf("List: %d runs, %v", len(runs), err)
		}
	}
}

// TestAFinishedRunHeldByItsInvocationIsNeverRetained: a folder run deleted
// its own journals, because each file's finished run counted as the oldest.
// A run finished with FinishHeld is final (its status and records read
// back) but counts as executing until its invocation releases it: Retain
// keeps it, List shows it running, and once released it is an ordinary
// finished run that retention may delete.
func TestAFinishedRunHeldByItsInvocationIsNeverRetained(t *testing.T) {
	dir := privateDir(t)
	ctx := context.Background()
	older := finished(t, dir, journal.StatusFinished)
	var held []string
	var releases []func() error
	for i := 0; i < 3; i++ {
		j, err := journal.Create(ctx, dir, testMeta())
		if err != nil {
			t.Fatal(err)
		}
		turn(t, j, "s1", 1)
		release, err := j.FinishHeld(ctx, journal.StatusFinished)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, j.ID())
		releases = append(releases, release)
	}
	res, err := journal.Retain(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{older}) {
		t.Fatalf("retention removed %v, want only the older finished run %s (the others are held)", res.Removed, older)
	}
	runs, err := journal.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(held) {
		t.Fatalf("%d runs listed, want the %d held", len(runs), len(held))
	}
	for _, r := range runs {
		if r.Status != journal.RunRunning {
			t.Errorf("%s: status %s, want %s while its invocation holds it", r.ID, r.Status, journal.RunRunning)
		}
	}
	// Final already: it opens with its recorded status and verifies.
	j, err := journal.Open(ctx, dir, held[0])
	if err != nil {
		t.Fatal(err)
	}
	if j.Status() != journal.StatusFinished {
		t.Errorf("held run's status %q", j.Status())
	}
	if _, err := j.Records(ctx, ""); err != nil {
		t.Errorf("held run's records: %v", err)
	}
	j.Close()
	for _, release := range releases {
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if err := release(); err != nil {
			t.Fatalf("a second release: %v", err)
		}
	}
	res, err = journal.Retain(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, held[:2]) {
		t.Fatalf("after release, retention removed %v, want the two older runs %v", res.Removed, held[:2])
	}
}
