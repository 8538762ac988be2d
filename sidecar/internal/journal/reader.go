package journal

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
)

// Verification reads run on the Journal's reader: a second, read-only
// connection to the same database file, beside the writer's. In WAL mode a
// read transaction runs while the writer commits and sees exactly what was
// committed before it began, so a turn read back is read from the database
// (never from memory) without waiting for other examples' commits. (Records
// reads on the writer's connection when no commit is in progress: see
// Records.) Each read is one statement in
// autocommit mode: its read transaction ends when its rows are closed, so
// the reader never holds back a checkpoint between reads. The reader is
// opened on a Journal's first read and closed before Finish's checkpoint.
//
// What a reader accepts is unchanged: every record after the verified prefix
// must hash-chain onto it, every record read again must still hash to the
// value verified before, and the end of what it read must agree with what
// this Journal knows it wrote (checkEnd). Reads are serialized among
// themselves (rmu, whichever connection they use), so the verified prefix
// only moves forward, and only over records a read hash-checked.

// readerCacheKiB is the reader's page cache. A reader's cache is emptied
// whenever another connection has committed since its last read (SQLite
// resets a WAL reader's cache when the WAL changed), which between two
// read-backs of a running journal is nearly always: a larger cache would
// only hold pages that are thrown away.
const readerCacheKiB = 64

// readerLocked returns the reading connection, opening it on first use.
// j.rmu must be held.
func (j *Journal) readerLocked(ctx context.Context, op string) (*dbConn, error) {
	if j.rclosed {
		return nil, fmt.Errorf("%s journal %s: %w", op, j.id, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s journal %s: %w", op, j.id, err)
	}
	if j.r == nil {
		r, err := openConn(ctx, j.dbPath, readerConn)
		if err != nil {
			return nil, fmt.Errorf("%s journal %s: %w", op, j.id, err)
		}
		j.r = r
	}
	return j.r, nil
}

// headNow is the chain's end as the writer knows it now.
func (j *Journal) headNow() headState {
	j.hmu.Lock()
	defer j.hmu.Unlock()
	return j.head
}

// Records returns the records of sessionID ("" for every record) in seq
// order, after verifying the hash chain of the whole journal (incrementally:
// records verified by an earlier call are re-checked against the hashes
// verified then). A broken chain returns an error matching ErrTampered and
// no records. It sees every record committed before it was called.
//
// It never waits for a commit: while one is in progress it reads on the
// reader, beside it. When no commit is in progress it reads on the writer's
// connection instead, whose page cache still holds the pages just
// committed; the reader's cache is emptied by every commit since its last
// read, so reading there costs more (docs/benchmarks.md, "Journal"). A
// commit that starts meanwhile waits for that one read.
func (j *Journal) Records(ctx context.Context, sessionID string) ([]Record, error) {
	j.rmu.Lock()
	defer j.rmu.Unlock()
	// TryLock never waits, so taking the writer's lock after rmu cannot
	// deadlock with Finish or Close (mu, then rmu).
	if !j.rclosed && j.w != nil && j.mu.TryLock() {
		defer j.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read journal %s: %w", j.id, err)
		}
		return j.sessionRecordsLocked(j.w, sessionID)
	}
	r, err := j.readerLocked(ctx, "read")
	if err != nil {
		return nil, err
	}
	return j.sessionRecordsLocked(r, sessionID)
}

// Sessions returns the session IDs in the journal in the order they were
// first written (placement order), after verifying the chain. Run-level
// records (RunSession) are not a session and are not listed.
func (j *Journal) Sessions(ctx context.Context) ([]string, error) {
	j.rmu.Lock()
	defer j.rmu.Unlock()
	r, err := j.readerLocked(ctx, "read")
	if err != nil {
		return nil, err
	}
	if err := j.extendLocked(r); err != nil {
		return nil, err
	}
	rows, err := r.conn.QueryContext(ctx, `SELECT session_id FROM records WHERE session_id != ? GROUP BY session_id ORDER BY MIN(seq)`, RunSession)
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", j.id, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read journal %s: %w", j.id, err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read journal %s: %w", j.id, err)
	}
	return out, nil
}

// Verify runs SQLite's integrity check and verifies the hash chain.
func (j *Journal) Verify(ctx context.Context) error {
	j.rmu.Lock()
	defer j.rmu.Unlock()
	r, err := j.readerLocked(ctx, "verify")
	if err != nil {
		return err
	}
	var res string
	if err := r.conn.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res); err != nil {
		return fmt.Errorf("verify journal %s: %w", j.id, err)
	}
	if res != "ok" {
		return fmt.Errorf("verify journal %s: the database is damaged (%s)", j.id, res)
	}
	// A full check: verify from the first record, not from what was
	// verified before.
	saved := j.chain
	j.chain = chainState{}
	if err := j.extendLocked(r); err != nil {
		j.chain = saved
		return err
	}
	return nil
}

// extendLocked verifies the records after the verified prefix and checks the
// end of the chain against the head this Journal knows (checkEnd). j.rmu
// must be held; r is the reader.
func (j *Journal) extendLocked(r *dbConn) error {
	pre := j.headNow()
	c := j.chain
	err := r.raw(func(dc driver.Conn) error {
		a := r.rs.args[:1]
		a[0] = driver.NamedValue{Ordinal: 1, Value: c.seq}
		return r.queryRecords(dc, j.id, selectAfter, a, func(rec Record, prevHash, hash []byte) error {
			return j.extendOne(r, &c, rec, prevHash, hash)
		})
	})
	if err != nil {
		return readError(j.id, err)
	}
	return j.acceptLocked(c, pre)
}

// readError wraps a read's error; a broken chain is returned as it is.
func readError(id string, err error) error {
	var te *TamperedError
	if errors.As(err, &te) {
		return err
	}
	return fmt.Errorf("read journal %s: %w", id, err)
}

// extendOne verifies rec as the record after c's head and appends it to c.
func (j *Journal) extendOne(r *dbConn, c *chainState, rec Record, prevHash, hash []byte) error {
	switch {
	case rec.Seq != c.seq+1:
		return &TamperedError{RunID: j.id, Seq: rec.Seq, Reason: fmt.Sprintf("record %d is missing", c.seq+1)}
	case string(prevHash) != string(c.head[:]):
		return &TamperedError{RunID: j.id, Seq: rec.Seq, Reason: "it does not follow the record before it"}
	}
	h := r.hash(c.head, rec)
	if string(hash) != string(h[:]) {
		return &TamperedError{RunID: j.id, Seq: rec.Seq, Reason: "its content does not match its hash"}
	}
	c.hashes = append(c.hashes, h)
	c.head, c.seq = h, rec.Seq
	c.note(rec)
	return nil
}

// acceptLocked checks the end of an extended chain (checkEnd, against pre,
// the head known before the read began, and the head known now) and makes
// it the verified prefix. j.rmu must be held.
func (j *Journal) acceptLocked(c chainState, pre headState) error {
	if err := j.checkEnd(&c, pre, j.headNow()); err != nil {
		return err
	}
	j.chain = c
	return nil
}

// checkEnd checks the end of the chain a read saw, c, against what this
// Journal knows it wrote (or Finish recorded): pre before the read began,
// post after it ended. A Journal that knows no head (a run still being
// written elsewhere, or a crashed one) checks nothing here.
//
// Every record the writer had committed before the read began (pre) is in
// the read's snapshot, so the chain must reach pre's record with pre's hash:
// a record deleted or changed up to it is caught (the hash is cumulative).
// The snapshot ends at a group the writer had at least started to commit
// when the read ended (post's head, or the group in progress), never beyond:
// a record added after the last one written is caught. Where the end is one
// of post's, its hash must be that one. With no commit during the read, pre
// and post are the same head and this is exactly "the chain ends at the
// last record written, with its hash".
func (j *Journal) checkEnd(c *chainState, pre, post headState) error {
	if !pre.known {
		return nil
	}
	if c.seq < pre.seq {
		return &TamperedError{RunID: j.id, Seq: c.seq, Reason: fmt.Sprintf("the journal ends at record %d, but %d were written", c.seq, pre.seq)}
	}
	if c.hashAt(pre.seq) != pre.hash {
		return &TamperedError{RunID: j.id, Seq: pre.seq, Reason: "it is not the record that was written"}
	}
	if last := max(post.seq, post.pendSeq); c.seq > last {
		return &TamperedError{RunID: j.id, Seq: c.seq, Reason: fmt.Sprintf("the journal holds records after record %d, the last one written", last)}
	}
	if (c.seq == post.seq && c.head != post.hash) || (post.pendSeq != 0 && c.seq == post.pendSeq && c.head != post.pendHash) {
		return &TamperedError{RunID: j.id, Seq: c.seq, Reason: "it is not the record that was written"}
	}
	return nil
}

// checkVerified re-checks a record read again after the chain was verified:
// its content must still hash to the value verified for its seq.
func (j *Journal) checkVerified(r *dbConn, rec Record, prevHash, hash []byte) error {
	if rec.Seq < 1 || rec.Seq > j.chain.seq {
		return &TamperedError{RunID: j.id, Seq: rec.Seq, Reason: "it is not part of the verified chain"}
	}
	want := j.chain.hashes[rec.Seq-1]
	prev := j.chain.hashAt(rec.Seq - 1)
	h := r.hash(prev, rec)
	if string(prevHash) != string(prev[:]) || string(hash) != string(want[:]) || h != want {
		return &TamperedError{RunID: j.id, Seq: rec.Seq, Reason: "it changed after it was verified"}
	}
	return nil
}

// sessionRecordsLocked returns one session's records (every record for "")
// in seq order, each checked against the verified chain. j.rmu must be held;
// r is the reader. Either way it is a single query, so a single snapshot:
// the session's rows within its verified span (chainState.spans) are
// re-checked against the hashes verified then, and the rows after the
// verified prefix extend the chain. With two reads (extend, then read), a
// record committed in between would be read but not verified, and an honest
// journal still being written would look altered.
func (j *Journal) sessionRecordsLocked(r *dbConn, sessionID string) ([]Record, error) {
	sp := j.chain.spanOf(sessionID)
	q, args := selectSpanAndAfter, r.rs.args[:4]
	args[0] = driver.NamedValue{Ordinal: 1, Value: sp.first}
	args[1] = driver.NamedValue{Ordinal: 2, Value: sp.last}
	args[2] = driver.NamedValue{Ordinal: 3, Value: sessionID}
	args[3] = driver.NamedValue{Ordinal: 4, Value: j.chain.seq}
	if sessionID == "" {
		q, args = selectAll, nil
	}
	pre := j.headNow()
	c := j.chain
	var out []Record
	err := r.raw(func(dc driver.Conn) error {
		return r.queryRecords(dc, j.id, q, args, func(rec Record, prevHash, hash []byte) error {
			var err error
			if rec.Seq <= j.chain.seq {
				err = j.checkVerified(r, rec, prevHash, hash)
			} else {
				err = j.extendOne(r, &c, rec, prevHash, hash)
			}
			if err != nil {
				return err
			}
			if sessionID == "" || rec.SessionID == sessionID {
				out = append(out, rec)
			}
			return nil
		})
	})
	if err != nil {
		return nil, readError(j.id, err)
	}
	if sessionID == "" && int64(len(out)) != c.seq {
		return nil, &TamperedError{RunID: j.id, Seq: int64(len(out)), Reason: "records disappeared after they were verified"}
	}
	if err := j.acceptLocked(c, pre); err != nil {
		return nil, err
	}
	return out, nil
}
