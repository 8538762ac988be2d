package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// RunningError is a run kmx kept because it is executing: its lock is held
// in this or another process (or it is a run that is just starting).
type RunningError struct {
	RunIDs []string
}

func (e *RunningError) Error() string {
	if len(e.RunIDs) == 1 {
		return fmt.Sprintf("run %s is still executing, so it was kept: %s", e.RunIDs[0], e.NextStep())
	}
	return fmt.Sprintf("runs %s are still executing, so they were kept: %s", strings.Join(e.RunIDs, ", "), e.NextStep())
}

// NextStep is what to do (problem.Problem); Error ends with it.
func (e *RunningError) NextStep() string {
	if len(e.RunIDs) == 1 {
		return "wait for it to finish or cancel it, then clear again"
	}
	return "wait for them to finish or cancel them, then clear again"
}

// NotFoundError is a run ID with no file in the journal folder.
type NotFoundError struct {
	RunID, Dir string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("there is no run %s in %s: %s", e.RunID, e.Dir, e.NextStep())
}

// NextStep is what to do (problem.Problem); Error ends with it.
func (e *NotFoundError) NextStep() string { return "run kmx journal list to see the run IDs" }

// ChangedError is a family file that is no longer the file discovery saw
// (replaced or swapped for a link): removal of that run stopped there.
type ChangedError struct {
	Path string
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("%s changed while it was being cleared (it is no longer the same file), so kmx stopped clearing its run; %s", e.Path, e.NextStep())
}

// NextStep is what to do (problem.Problem); Error ends with it.
func (e *ChangedError) NextStep() string { return "check the folder, then clear again" }

// UncertainError is a removal whose directory flush failed: the files were
// unlinked, but after a crash or power loss they may still exist.
type UncertainError struct {
	RunIDs []string
	Err    error
}

func (e *UncertainError) Error() string {
	return fmt.Sprintf("removed %s, but the journal folder could not be flushed to disk (%v): after a crash or power loss the files may still exist; %s",
		strings.Join(e.RunIDs, ", "), e.Err, e.NextStep())
}

// NextStep is what to do (problem.Problem); Error ends with it.
func (e *UncertainError) NextStep() string { return "run kmx journal list to check" }

func (e *UncertainError) Unwrap() error { return e.Err }

// Cleared is what Clear removed.
type Cleared struct {
	// Removed are the run IDs whose files were all removed, oldest first.
	Removed []string
}

// Clear deletes the run runID from dir, or with runID "" every run that is
// not executing: finished, cancelled, failed, crashed and partial families,
// including lock files whose process died before its journal existed.
//
// An executing run is kept and reported as a *RunningError (with "" the
// other runs are still removed). Each file is rechecked just before it is
// removed: it must be the same file discovery saw (os.SameFile), private,
// regular and not a symlink; otherwise that run is left as it is and
// reported. Unrelated files in dir are never touched. After removing, the
// directory is flushed; a flush error is an *UncertainError, never a claim
// that the files are gone.
func Clear(dir, runID string) (Cleared, error) { return clearRuns(dir, runID, syncDir) }

// clearRuns is Clear with the directory flush passed in, so a test can make
// it fail.
func clearRuns(dir, runID string, sync func(string) error) (Cleared, error) {
	if runID != "" && !ValidRunID(runID) {
		return Cleared{}, fmt.Errorf("clear: %q is not a run ID (expected a name like 20261130T162341.123456789Z-0a1b2c3d, a journal file name without .db)", runID)
	}
	// Removing writes the folder: a read-only one is refused up front with
	// the step that makes it writable, before any run is looked at.
	if err := state.CheckPrivateDir(dir); err != nil {
		return Cleared{}, fmt.Errorf("clear: %w", err)
	}
	fams, err := discover(dir)
	if err != nil {
		return Cleared{}, fmt.Errorf("clear: %w", err)
	}
	var res Cleared
	var running []string
	var errs []error
	for _, f := range fams {
		if runID != "" && f.id != runID {
			continue
		}
		err := removeFamily(dir, f, runID == "")
		var re *RunningError
		switch {
		case err == nil:
			res.Removed = append(res.Removed, f.id)
		case errors.As(err, &re):
			running = append(running, re.RunIDs...)
		default:
			errs = append(errs, err)
		}
	}
	if runID != "" && len(res.Removed)+len(running)+len(errs) == 0 {
		return res, &NotFoundError{RunID: runID, Dir: dir}
	}
	if len(res.Removed) > 0 {
		if err := sync(dir); err != nil {
			errs = append(errs, &UncertainError{RunIDs: res.Removed, Err: err})
		}
	}
	if len(running) > 0 {
		errs = append(errs, &RunningError{RunIDs: running})
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("clear: %w", err)
	}
	return res, nil
}

// removeFamily removes one run's files, holding the run's lock (when it has
// a lock file) from before the first removal until the lock file itself is
// removed last, so a run cannot be executing while its files go. bulk marks
// retention and Clear(""): a lock file without a database younger than
// startGrace is then kept as a starting run.
func removeFamily(dir string, f *family, bulk bool) error {
	if f.unsafe != nil {
		return fmt.Errorf("run %s was not removed: %w", f.id, f.unsafe)
	}
	base := filepath.Join(dir, f.id)
	lock, err := takeLock(base+".lock", f)
	if err != nil {
		return err
	}
	if lock != nil && bulk {
		if _, err := os.Lstat(base + ".db"); errors.Is(err, fs.ErrNotExist) && f.starting() {
			_ = unlockFile(lock)
			_ = lock.Close()
			return &RunningError{RunIDs: []string{f.id}}
		}
	}
	for _, s := range familySuffixes {
		if s == ".lock" {
			continue
		}
		if err := removeChecked(base+s, f.files[s]); err != nil {
			if lock != nil {
				_ = unlockFile(lock)
				_ = lock.Close()
			}
			return fmt.Errorf("run %s: %w", f.id, err)
		}
	}
	if lock == nil {
		return nil
	}
	if err := sameLock(lock); err != nil {
		_ = unlockFile(lock)
		_ = lock.Close()
		return fmt.Errorf("run %s: %w", f.id, err)
	}
	if err := releaseLock(lock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("run %s: remove its lock file: %w", f.id, err)
	}
	return nil
}

// takeLock locks the run's lock file, if there is one, and returns it held.
// A held lock is a *RunningError; a lock file that is not the one discovery
// saw, a symlink or not private is refused.
func takeLock(p string, f *family) (*os.File, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // finished (Finish removes it last) or never had one
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: check its lock file: %w", f.id, err)
	}
	if want := f.files[".lock"]; want != nil && !os.SameFile(want, fi) {
		return nil, &ChangedError{Path: p}
	}
	if err := state.CheckPrivateFile(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("run %s was not removed: %w", f.id, err)
	}
	lf, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // the run finished just now
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: open its lock file: %w", f.id, err)
	}
	if err := lockFile(lf); err != nil {
		_ = lf.Close()
		if errors.Is(err, errLocked) {
			return nil, &RunningError{RunIDs: []string{f.id}}
		}
		return nil, fmt.Errorf("run %s: %w", f.id, err)
	}
	// What was opened must be what was checked: the same file, still at p.
	if of, err := lf.Stat(); err != nil || !os.SameFile(fi, of) {
		_ = unlockFile(lf)
		_ = lf.Close()
		return nil, &ChangedError{Path: p}
	}
	if err := sameLock(lf); err != nil {
		_ = unlockFile(lf)
		_ = lf.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // its run finished between the open and the lock
		}
		return nil, err
	}
	return lf, nil
}

// sameLock checks that the path of an open lock file still names it. Create
// calls it after locking, so a run whose lock file was cleared between its
// creation and its lock stops instead of running without one.
func sameLock(f *os.File) error {
	of, err := f.Stat()
	if err != nil {
		return fmt.Errorf("check run lock %s: %w", f.Name(), err)
	}
	fi, err := os.Lstat(f.Name())
	if err != nil {
		return fmt.Errorf("check run lock: %w", err)
	}
	if !os.SameFile(of, fi) {
		return &ChangedError{Path: f.Name()}
	}
	return nil
}

// removeChecked removes the family file p if it exists. want is its Lstat at
// discovery (nil when discovery did not see it, such as a companion an
// inspection materialized since): the file removed must be that same file,
// private, regular and not a symlink.
func removeChecked(p string, want fs.FileInfo) error {
	if err := state.CheckPrivateFile(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", p, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || (want != nil && !os.SameFile(want, fi)) {
		return &ChangedError{Path: p}
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

// syncDir flushes dir so removals survive a crash. Windows cannot flush a
// directory handle; NTFS journals its metadata changes itself.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
