package journal_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// TestListDescribesARunWhoseWriterIsFrozenMidCommit is the hang the crash
// test met once in CI's shape: a kmx process stopped (SIGSTOP, a debugger)
// while it held its journal's WAL write lock with the shared-memory header
// half-written. Every reader of that journal then retries WAL recovery,
// each retry waiting on the write lock, for minutes; List, and so
// `kmx journal list`, the crash test's folder check and every front that
// lists a file's runs, hung on one frozen process. A running run's meta is
// in its database file from before its WAL existed, so List now reads it
// from there and never touches the WAL of a run that is executing.
func TestListDescribesARunWhoseWriterIsFrozenMidCommit(t *testing.T) {
	dir := privateDir(t)
	running := create(t, dir)
	turn(t, running, "s1", 1)
	dbPath := filepath.Join(dir, running.ID()+".db")

	// The frozen writer: a second connection in WAL mode holding the write
	// lock, as a writer does mid-commit.
	w, err := sql.Open("sqlite", "file://"+dbPath+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK") //nolint:errcheck // the test's end

	// The half-written header: the wal-index header is kept twice at the
	// start of -shm; a reader that finds the copies different must run
	// recovery, which needs the write lock held above.
	shm, err := os.OpenFile(dbPath+"-shm", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 48)
	if _, err := shm.ReadAt(hdr, 0); err != nil {
		t.Fatal(err)
	}
	hdr[16] ^= 0xff // the first copy's mxFrame: torn against the second copy
	if _, err := shm.WriteAt(hdr, 0); err != nil {
		t.Fatal(err)
	}
	if err := shm.Close(); err != nil {
		t.Fatal(err)
	}

	type listed struct {
		runs []journal.RunInfo
		err  error
	}
	done := make(chan listed, 1)
	go func() {
		runs, err := journal.List(dir)
		done <- listed{runs, err}
	}()
	var got listed
	select {
	case got = <-done:
	case <-time.After(2 * time.Minute):
		// A liveness bound, not a performance target: without the fix
		// List waits here for many minutes.
		t.Fatal("List did not return while a running run's writer was frozen mid-commit")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if len(got.runs) != 1 {
		t.Fatalf("listed %d runs, want 1: %+v", len(got.runs), got.runs)
	}
	r := got.runs[0]
	if r.ID != running.ID() || r.Status != journal.RunRunning || r.AgentID != "greeter" || r.Command != "test" {
		t.Errorf("the frozen run is listed as %+v; want it running, with its meta", r)
	}
}
