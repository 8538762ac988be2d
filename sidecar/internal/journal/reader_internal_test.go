package journal

import (
	"context"
	"database/sql/driver"
	"os"
	"testing"
	"time"
)

// journalWithTurn is a new journal, closed when the test ends, holding one
// chat turn of session.
func journalWithTurn(t *testing.T, session string) *Journal {
	t.Helper()
	j, err := Create(context.Background(), privateTemp(t), internalMeta())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	appendTurn(t, j, session)
	return j
}

// appendTurn commits the five records of one chat turn of session.
func appendTurn(t *testing.T, j *Journal, session string) {
	t.Helper()
	for _, k := range TurnKinds {
		if _, err := j.Append(context.Background(), Record{SessionID: session, Turn: 1, Kind: k, Version: SchemaVersion, Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadBackRunsWhileACommitIsInProgress: a commit is held open half way
// (the writer's lock held, as a group commit holds it, and a write
// transaction begun on the writer's connection with a row inserted but not
// committed); a read-back made meanwhile does not wait for it, reads on the
// second connection, and sees every committed row and not the uncommitted
// one. After the commit, the next read-back sees the new row. Before the
// reader, the read-back waited for the writer's lock: this test hung.
func TestReadBackRunsWhileACommitIsInProgress(t *testing.T) {
	ctx := context.Background()
	j := journalWithTurn(t, "s1")
	var err error

	// A commit of one more s1 record, stopped before its COMMIT.
	j.mu.Lock()
	r := Record{Seq: j.head.seq + 1, SessionID: "s1", Turn: 2, Kind: KindTurnStarted, Version: SchemaVersion, Payload: []byte(`{}`)}
	h := Hash(j.head.hash, r)
	rows := []pendingRow{{r: r, prev: j.head.hash, hash: h}}
	j.hmu.Lock()
	j.head.pendSeq, j.head.pendHash = r.Seq, h
	j.hmu.Unlock()
	err = j.w.raw(func(c driver.Conn) error {
		if err := j.w.execRaw(c, beginImmediate, nil); err != nil {
			return err
		}
		return j.w.execRaw(c, insertRecord, []driver.NamedValue{
			{Ordinal: 1, Value: r.Seq}, {Ordinal: 2, Value: r.SessionID}, {Ordinal: 3, Value: int64(r.Turn)}, {Ordinal: 4, Value: string(r.Kind)},
			{Ordinal: 5, Value: int64(r.Version)}, {Ordinal: 6, Value: r.Payload}, {Ordinal: 7, Value: rows[0].prev[:]}, {Ordinal: 8, Value: h[:]},
		})
	})
	if err != nil {
		j.mu.Unlock()
		t.Fatal(err)
	}

	type result struct {
		recs []Record
		err  error
	}
	got := make(chan result, 1)
	go func() {
		recs, err := j.Records(ctx, "s1")
		got <- result{recs, err}
	}()
	var res result
	select {
	case res = <-got:
	case <-time.After(time.Minute): // a guard against a hang, not a timing
		t.Fatal("the read-back waited for the commit in progress")
	}
	if res.err != nil || len(res.recs) != 5 {
		t.Fatalf("read back during the commit: %d records, %v; want the 5 committed", len(res.recs), res.err)
	}
	if j.r == nil || j.r == j.w {
		t.Fatal("the read-back did not run on the reader connection")
	}

	err = j.w.raw(func(c driver.Conn) error { return j.w.execRaw(c, commitTx, nil) })
	j.hmu.Lock()
	j.head.seq, j.head.hash, j.head.pendSeq = r.Seq, h, 0
	j.hmu.Unlock()
	j.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	recs, err := j.Records(ctx, "s1")
	if err != nil || len(recs) != 6 || recs[5].Seq != r.Seq {
		t.Fatalf("read back after the commit: %d records, %v; want 6", len(recs), err)
	}
}

// TestReaderHoldsNoReadTransactionBetweenReads: after a read-back, the
// reader (still open) holds no snapshot, so the writer's TRUNCATE
// checkpoint is not blocked and leaves an empty WAL: a reader that kept a
// read transaction open would stop the WAL from being reset and let it grow
// for the whole run. Its page cache is small.
func TestReaderHoldsNoReadTransactionBetweenReads(t *testing.T) {
	ctx := context.Background()
	j := journalWithTurn(t, "s1")
	var err error
	appendTurn(t, j, "s2")
	// The writer's lock held, as during a commit: the read-back goes to
	// the reader.
	j.mu.Lock()
	_, err = j.Records(ctx, "s1")
	j.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if j.r == nil {
		t.Fatal("no reader after a read-back during a commit")
	}
	if _, err := j.Sessions(ctx); err != nil {
		t.Fatal(err)
	}
	var busy, logFrames, done int
	if err := j.w.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done); err != nil {
		t.Fatal(err)
	}
	if busy != 0 {
		t.Fatal("the checkpoint was blocked by the reader")
	}
	if fi, err := os.Stat(j.dbPath + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("the WAL after the checkpoint: %v, %v; want it empty", fi.Size(), err)
	}
	var kib int
	if err := j.r.conn.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&kib); err != nil {
		t.Fatal(err)
	}
	if kib != -readerCacheKiB {
		t.Errorf("the reader's cache_size is %d, want %d", kib, -readerCacheKiB)
	}
	// The reader is read-only: it cannot write the journal.
	if _, err := j.r.conn.ExecContext(ctx, `DELETE FROM records`); err == nil {
		t.Fatal("the reader connection could write")
	}
}

// TestCheckpointsRunOffTheWritersLock: a checkpoint runs on its own
// connection while the writer's lock is held (as during a commit) and
// copies the whole WAL into the database; every ckEveryCommits commits the
// group's leader starts one; Finish waits for it and closes its
// connection.
func TestCheckpointsRunOffTheWritersLock(t *testing.T) {
	ctx := context.Background()
	j := journalWithTurn(t, "s1")
	var err error

	j.mu.Lock()
	frames, done, err := j.checkpoint()
	j.mu.Unlock()
	if err != nil || frames == 0 || done != frames {
		t.Fatalf("checkpoint during a commit: %d of %d frames, %v; want all", done, frames, err)
	}

	for i := 0; i < ckEveryCommits; i++ {
		if _, err := j.Append(ctx, Record{SessionID: "s2", Turn: 1, Kind: KindTurnStarted, Version: SchemaVersion, Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	j.mu.Lock()
	j.ckwg.Wait() // the checkpoint the last commits started
	j.cmu.Lock()
	started := j.ck != nil
	j.cmu.Unlock()
	j.mu.Unlock()
	if !started {
		t.Fatal("no checkpoint was started after ckEveryCommits commits")
	}
	if recs, err := j.Records(ctx, ""); err != nil || len(recs) != 5+ckEveryCommits {
		t.Fatalf("after the checkpoint: %d records, %v", len(recs), err)
	}
	// Appends refused (a journal opened for reading) commit nothing and
	// start no checkpoint: a reader never writes the database.
	o, err := Open(ctx, j.dir, j.id)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for i := 0; i <= ckEveryCommits; i++ {
		if _, err := o.Append(ctx, Record{SessionID: "s3", Turn: 1, Kind: KindTurnStarted, Version: SchemaVersion, Payload: []byte(`{}`)}); err == nil {
			t.Fatal("an append to a journal opened for reading succeeded")
		}
	}
	o.mu.Lock()
	o.ckwg.Wait()
	o.mu.Unlock()
	if o.ck != nil || o.sinceCk != 0 {
		t.Fatalf("refused appends counted as commits (%d) or opened a checkpoint connection", o.sinceCk)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}

	if err := j.Finish(ctx, StatusFinished); err != nil {
		t.Fatal(err)
	}
	if j.ck != nil || !j.ckClosed {
		t.Fatal("Finish left the checkpoint connection open")
	}
}
