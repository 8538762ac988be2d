package journal

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// Open opens an existing retained journal for reading: inspection and
// verification. It never creates a journal, refuses a missing database or
// one that is not private, and refuses a run ID that is not exactly the shape
// Create makes, so no ID can name a path outside dir.
//
// SQLite needs its -wal and -shm companions to read a WAL database; a missing
// one is created private before SQLite opens the file, so nothing in the
// folder is ever broader than 0600. Statements on the connection are
// read-only (query_only); SQLite may still fold a crashed run's WAL into the
// database when the last connection closes, which changes no record.
func Open(ctx context.Context, dir, runID string) (*Journal, error) {
	if !ValidRunID(runID) {
		return nil, fmt.Errorf("open journal: %q is not a run ID (expected a name like 20261130T162341.123456789Z-0a1b2c3d)", runID)
	}
	j, err := openReader(ctx, dir, runID)
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", runID, err)
	}
	return j, nil
}

// openReader opens the existing database id in dir read-only, on a
// connection of its own, and reads its meta. It takes no lock and writes
// nothing but a missing -wal or -shm companion, created private; in a
// read-only folder it creates nothing and reads the database file alone.
func openReader(ctx context.Context, dir, id string) (*Journal, error) {
	if err := state.CheckReadableDir(dir); err != nil {
		return nil, err
	}
	j := &Journal{dir: dir, id: id, dbPath: filepath.Join(dir, id+".db"), readOnly: true}
	if err := state.CheckReadableFile(j.dbPath); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &missingError{dir: dir}
		}
		return nil, err
	}
	missing, unwritable := 0, false
	for _, c := range []string{"-wal", "-shm"} {
		err := state.CheckReadableFile(j.dbPath + c)
		if errors.Is(err, fs.ErrNotExist) {
			missing++
			var f *os.File
			f, err = state.CreatePrivateFile(j.dbPath + c)
			if errors.Is(err, fs.ErrExist) {
				// Its writer made it just now; judge it like any existing one.
				missing--
				err = state.CheckReadableFile(j.dbPath + c)
			} else if err == nil {
				err = f.Close()
			} else if readOnlyFolder(err) {
				unwritable, err = true, nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
	role := openedConn
	if unwritable {
		// A read-only folder (a read-only mount, a folder without write
		// permission): nothing can write there, so no writer has a WAL to
		// fold in and the database file alone is the whole journal. It is
		// read as immutable, never called damaged. A WAL left there by a
		// crashed run cannot be read without writing: say so.
		if missing != 2 {
			return nil, fmt.Errorf("its folder %s is read-only and the journal has a write-ahead log that must be folded in first: make the folder writable and read it again", dir)
		}
		role = immutableConn
	}
	r, err := openConn(ctx, j.dbPath, role)
	if err != nil {
		return nil, err
	}
	j.r = r
	if err := j.readMeta(ctx, r.conn); err != nil {
		_ = j.closeDB()
		return nil, err
	}
	return j, nil
}

// readOnlyFolder reports whether creating a file failed because its folder
// cannot be written (a read-only file system, or no write permission).
func readOnlyFolder(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission)
}

// missingError is a journal database that does not exist; it matches
// fs.ErrNotExist.
type missingError struct{ dir string }

func (e *missingError) Error() string { return "there is no such run in " + e.dir }
func (e *missingError) Unwrap() error { return fs.ErrNotExist }

// readMeta reads the meta on conn and, for a finished run, the head
// Finish recorded. The Journal must not be shared yet.
func (j *Journal) readMeta(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, `SELECT key, value FROM meta`)
	if err != nil {
		return fmt.Errorf("read meta: %w", err)
	}
	defer rows.Close()
	m := make(map[string]string)
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return fmt.Errorf("read meta: %w", err)
		}
		m[k] = v
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read meta: %w", err)
	}
	if v := m["store_version"]; v != strconv.Itoa(StoreVersion) {
		return fmt.Errorf("journal store version is %q; this kmx reads version %d only", v, StoreVersion)
	}
	if m["run_id"] != j.id {
		return fmt.Errorf("the database records run ID %q, not %q: it was renamed or copied", m["run_id"], j.id)
	}
	j.meta = RunMeta{
		KmxVersion:    m["kmx_version"],
		AgentID:       m["agent_id"],
		AgentRevision: m["agent_revision"],
		Command:       m["command"],
		Label:         m["label"],
		AgentPath:     m["agent_path"],
	}
	j.status = m["status"]
	if j.status == "" {
		return nil // running or crashed: no recorded head to check against
	}
	seq, err := strconv.ParseInt(m["head_seq"], 10, 64)
	if err != nil {
		return fmt.Errorf("the recorded chain head %q is not a number", m["head_seq"])
	}
	h, err := hex.DecodeString(m["head_hash"])
	if err != nil || len(h) != len(j.head.hash) {
		return fmt.Errorf("the recorded chain head hash %q is malformed", m["head_hash"])
	}
	j.head.seq = seq
	copy(j.head.hash[:], h)
	j.head.known = true
	return nil
}

// IsLocked reports whether the run runID in dir still holds its OS lock,
// that is, whether it is executing in this or another process. A missing
// lock file means the run finished (or never started); a lock file whose
// lock is free means the run ended without Finish (a crash).
func IsLocked(dir, runID string) (bool, error) {
	if !ValidRunID(runID) {
		return false, fmt.Errorf("check run lock: %q is not a run ID", runID)
	}
	p := filepath.Join(dir, runID+".lock")
	if err := state.CheckReadableFile(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("check run lock: %w", err)
	}
	f, err := openLockToProbe(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // released between the check and the open
		}
		return false, fmt.Errorf("check run lock: %w", err)
	}
	defer f.Close()
	switch err := lockFile(f); {
	case errors.Is(err, errLocked):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("check run lock: %w", err)
	}
	if err := unlockFile(f); err != nil {
		return false, fmt.Errorf("check run lock: %w", err)
	}
	return false, nil
}

// openLockToProbe opens the lock file p to probe whether it is held. A
// reader may meet a lock file the user made read-only (a read-only state
// folder): the lock is taken on a read-only descriptor then, which locks
// the same way.
func openLockToProbe(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrPermission) {
		f, err = os.OpenFile(p, os.O_RDONLY, 0)
	}
	return f, err
}
