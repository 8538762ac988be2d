package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// KeepRuns is how many runs retention keeps when a new run starts.
const KeepRuns = 20

// Statuses List reports. The first three are what Finish recorded; the rest
// describe a run without a recorded status.
const (
	// RunRunning: the run's OS lock is held, in this or another process.
	RunRunning = "running"
	// RunCrashed: the database exists but the run never recorded a status
	// and nobody holds its lock (the process was killed or crashed).
	RunCrashed = "crashed-unfinished"
	// RunPartial: part of a run's file family without a readable journal,
	// such as companions left by an interrupted clear or a lock file whose
	// process died before the database existed.
	RunPartial = "partial"
	// RunUnsafe: a family file is a symlink, not a regular file, or broader
	// than private. kmx never reads, counts or removes it.
	RunUnsafe = "unsafe"
)

// startGrace is how long a lock file without a database counts as a run
// that is starting: Create makes the database within milliseconds of taking
// its lock, so only a process that died in between leaves one older.
const startGrace = time.Minute

// The file family of run R is R.db, its SQLite companions, R.lock, and the
// R.db-init database (with its rollback journal) that Create builds the
// schema in before renaming it to R.db. No other name is ever read or
// removed.
var familySuffixes = [...]string{".db-init-journal", ".db-init", ".db-journal", ".db-wal", ".db-shm", ".db", ".lock"}

// RunInfo describes one run in a journal folder, from its files and its
// meta only: List never verifies a hash chain.
type RunInfo struct {
	ID      string    `json:"runId"`
	Created time.Time `json:"created"`
	// Status is finished, cancelled or failed (recorded by Finish), or
	// running, crashed-unfinished, partial or unsafe.
	Status        string `json:"status"`
	AgentID       string `json:"agentId,omitempty"`
	AgentRevision string `json:"agentRevision,omitempty"`
	// AgentPath is the agent file the run was of (RunMeta.AgentPath);
	// absent for runs kmx recorded before it kept paths.
	AgentPath  string `json:"agentPath,omitempty"`
	Command    string `json:"command,omitempty"`
	KmxVersion string `json:"kmxVersion,omitempty"`
	// Size is the total bytes of the family's files as the listing leaves
	// them: reading a crashed run folds its write-ahead log into its
	// database, so its files are counted after that read, and the figure
	// is the same in every later listing.
	Size int64 `json:"size"`
	// Files are the family's file names present, in a fixed order.
	Files []string `json:"files"`
	// Problem says, in fixed text, why a partial or unsafe run is one.
	Problem string `json:"problem,omitempty"`
}

// family is what discovery saw of one run's files: each present file's
// Lstat, taken once, so removal can check it is still the same file.
type family struct {
	id     string
	files  map[string]fs.FileInfo // by suffix
	unsafe error                  // first family file kmx refuses to touch
}

func (f *family) has(suffix string) bool { _, ok := f.files[suffix]; return ok }

func (f *family) size() int64 {
	var n int64
	for _, fi := range f.files {
		n += fi.Size()
	}
	return n
}

func (f *family) names() []string {
	var out []string
	for _, s := range familySuffixes {
		if f.has(s) {
			out = append(out, f.id+s)
		}
	}
	return out
}

// opened reports whether readMeta reads the family through Open (a crashed
// run's leftovers) rather than its database file alone.
func (f *family) opened(running bool) bool {
	return !running && (f.has(".lock") || f.has(".db-wal") || f.has(".db-shm") || f.has(".db-journal"))
}

// restat is the total size and the names of the family's files present now.
func (f *family) restat(dir string) (int64, []string) {
	var n int64
	var names []string
	for _, s := range familySuffixes {
		fi, err := os.Lstat(filepath.Join(dir, f.id+s))
		if err != nil {
			continue
		}
		n += fi.Size()
		names = append(names, f.id+s)
	}
	return n, names
}

// created is the time in the run ID (Create takes it from the clock).
func created(id string) time.Time {
	t, err := time.Parse("20060102T150405.000000000Z", id[:len("20060102T150405.000000000Z")])
	if err != nil {
		return time.Time{}
	}
	return t
}

// splitFamilyName returns the run ID and suffix of a family file name.
func splitFamilyName(name string) (id, suffix string, ok bool) {
	for _, s := range familySuffixes {
		if strings.HasSuffix(name, s) {
			id = strings.TrimSuffix(name, s)
			return id, s, ValidRunID(id)
		}
	}
	return "", "", false
}

// discover reads dir, which must be a private directory (read-only is
// enough: List only reads; Clear and retention check what they remove),
// and groups the family files of every run, oldest run first.
func discover(dir string) ([]*family, error) {
	if err := state.CheckReadableDir(dir); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read journal folder %s: %w", dir, err)
	}
	byID := map[string]*family{}
	for _, e := range ents {
		id, suffix, ok := splitFamilyName(e.Name())
		if !ok {
			continue // not kmx's: never read, never removed
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since ReadDir (a finishing or cleared run)
		}
		if err != nil {
			return nil, fmt.Errorf("read journal folder %s: %w", dir, err)
		}
		fam := byID[id]
		if fam == nil {
			fam = &family{id: id, files: map[string]fs.FileInfo{}}
			byID[id] = fam
		}
		fam.files[suffix] = fi
		if fam.unsafe == nil {
			if err := state.CheckReadableFile(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				fam.unsafe = err
			}
		}
	}
	out := make([]*family, 0, len(byID))
	for _, f := range byID {
		out = append(out, f)
	}
	// IDs start with a fixed-width UTC time, so name order is age order.
	slices.SortFunc(out, func(a, b *family) int { return strings.Compare(a.id, b.id) })
	return out, nil
}

// List describes every run in dir, oldest first. It reads each run's meta
// (the database is opened as Open does) but verifies no chain, so it stays
// cheap. Unrelated files in dir are not listed.
func List(dir string) ([]RunInfo, error) {
	fams, err := discover(dir)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := make([]RunInfo, 0, len(fams))
	for _, f := range fams {
		out = append(out, describe(dir, f))
	}
	return out, nil
}

func describe(dir string, f *family) RunInfo {
	ri := RunInfo{ID: f.id, Created: created(f.id), Size: f.size(), Files: f.names()}
	if f.unsafe != nil {
		ri.Status, ri.Problem = RunUnsafe, f.unsafe.Error()
		return ri
	}
	running, err := f.running(dir)
	switch {
	case err != nil:
		ri.Status, ri.Problem = RunPartial, "its lock file cannot be checked"
		return ri
	case running:
		ri.Status = RunRunning
	}
	if !f.has(".db") {
		if !running {
			ri.Status, ri.Problem = RunPartial, "its database is missing"
		}
		return ri
	}
	m, status, err := readMeta(dir, f, running)
	if err != nil {
		if !running {
			ri.Status, ri.Problem = RunPartial, "its database cannot be read as a journal"
		}
		return ri
	}
	ri.AgentID, ri.AgentRevision, ri.AgentPath, ri.Command, ri.KmxVersion = m.AgentID, m.AgentRevision, m.AgentPath, m.Command, m.KmxVersion
	if f.opened(running) {
		// The read went through Open, whose close may have folded a
		// crashed run's log into its database and removed the -wal and
		// -shm: what discovery saw is gone, so look again.
		ri.Size, ri.Files = f.restat(dir)
	}
	switch {
	case running:
	case status != "":
		ri.Status = status
	default:
		ri.Status = RunCrashed
	}
	return ri
}

// readMeta reads a run's meta and recorded status. Two kinds of run are
// read from the database file alone, as immutable (no companion created, no
// lock taken, the WAL ignored):
//   - a finished run that Finish checkpointed (no lock, no companions) has
//     no writer and never gets one, and skipping the Open is most of what
//     listing it costs;
//   - a running run: its meta went into the database file before its WAL
//     existed (Create builds the schema and meta under R.db-init and renames
//     it into place) and is never rewritten, and its status is "running"
//     whatever the WAL says. Reading it through the WAL would wait on its
//     writer: a writer stopped (SIGSTOP, a debugger) while it holds the WAL
//     write lock with the shared-memory header half-written leaves every
//     reader retrying recovery for minutes, so List, and every front that
//     lists runs, would hang on one frozen process.
//
// Anything else (a crashed run's leftovers) goes through Open.
func readMeta(dir string, f *family, running bool) (RunMeta, string, error) {
	if f.opened(running) {
		j, err := Open(context.Background(), dir, f.id)
		if err != nil {
			return RunMeta{}, "", err
		}
		defer j.Close()
		return j.Meta(), j.Status(), nil
	}
	j := &Journal{dir: dir, id: f.id, dbPath: filepath.Join(dir, f.id+".db"), readOnly: true}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("immutable", "1")
	p := filepath.ToSlash(j.dbPath)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path: file:///C:/...
	}
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}).String())
	if err != nil {
		return RunMeta{}, "", fmt.Errorf("read meta of %s: %w", f.id, err)
	}
	db.SetMaxOpenConns(1)
	if j.r, err = newDBConn(context.Background(), db); err != nil {
		return RunMeta{}, "", fmt.Errorf("read meta of %s: %w", f.id, err)
	}
	defer j.closeDB()
	if err := j.readMeta(context.Background(), j.r.conn); err != nil {
		return RunMeta{}, "", err
	}
	return j.meta, j.status, nil
}

// running reports whether the family's run is executing: its lock is held,
// or it is a lock file without a database younger than startGrace (a run
// between taking its lock file and locking it).
func (f *family) running(dir string) (bool, error) {
	if !f.has(".lock") {
		return false, nil
	}
	held, err := IsLocked(dir, f.id)
	if err != nil || held {
		return held, err
	}
	return f.starting(), nil
}

// starting reports whether a family whose lock is not held may still be a
// run that is starting: a lock file with no database yet, younger than
// startGrace. A schema under construction (R.db-init) is made only after
// the lock is held, so with one present an unheld lock means the run died.
func (f *family) starting() bool {
	return !f.has(".db") && !f.has(".db-init") && f.young()
}

// young reports whether the run started less than startGrace ago: a lock
// file without a database that young belongs to a run that is starting.
func (f *family) young() bool { return time.Since(created(f.id)) < startGrace }

// Retained is what Retain did.
type Retained struct {
	// Removed are the run IDs deleted, oldest first.
	Removed []string
	// Runs is how many runs remain by Retain's count (unsafe families are
	// not counted: kmx never touches them).
	Runs int
}

// Retain keeps the newest keep runs in dir: it deletes the oldest runs that
// are not executing until at most keep remain. A run whose lock is held, in
// this or another process, is never deleted, so executing runs (and starts
// that overlap, each counting the same runs) can leave more than keep until
// the next call. Each removal is the same checked removal as Clear's. Errors
// are returned together after every candidate was tried.
func Retain(dir string, keep int) (Retained, error) {
	if keep < 1 {
		return Retained{}, fmt.Errorf("retain runs: keep is %d; keep at least 1 (the run that is starting)", keep)
	}
	fams, err := discover(dir)
	if err != nil {
		return Retained{}, fmt.Errorf("retain runs: %w", err)
	}
	fams = slices.DeleteFunc(fams, func(f *family) bool { return f.unsafe != nil })
	res := Retained{Runs: len(fams)}
	var errs []error
	for _, f := range fams {
		if res.Runs <= keep {
			break
		}
		switch err := removeFamily(dir, f, true); {
		case err == nil:
			res.Removed = append(res.Removed, f.id)
			res.Runs--
		case errors.As(err, new(*RunningError)):
			// Kept: an executing run is never a candidate.
		default:
			errs = append(errs, err)
		}
	}
	if len(res.Removed) > 0 {
		if err := syncDir(dir); err != nil {
			errs = append(errs, &UncertainError{RunIDs: res.Removed, Err: err})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("retain runs: %w", err)
	}
	return res, nil
}
