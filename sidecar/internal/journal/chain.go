package journal

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
)

// chainState is the part of the hash chain this Journal has verified from
// disk: every record up to seq, with each record's hash kept in memory.
// Verification extends it with the records written since the last check, so
// reading a session costs the size of the session plus the new records, not
// the size of the journal; a run of n examples stays O(n) overall.
type chainState struct {
	seq    int64
	head   [32]byte
	hashes [][32]byte // hashes[i] is the hash of record i+1
}

// The reads verification makes on every turn, prepared once per Journal.
const (
	selectAfter = `SELECT seq, session_id, turn, kind, version, payload, prev_hash, hash FROM records WHERE seq > ? ORDER BY seq`
	selectAll   = `SELECT seq, session_id, turn, kind, version, payload, prev_hash, hash FROM records ORDER BY seq`
	// selectSessionAndAfter is every record after the verified prefix and
	// one session's records up to it, in one read: what reading a session
	// back after a turn needs (the chain extension and the session's rows).
	// The UNION ALL keeps both halves on an index (an OR makes SQLite scan
	// the whole table).
	selectSessionAndAfter = `SELECT seq, session_id, turn, kind, version, payload, prev_hash, hash FROM records WHERE seq > ?1
		UNION ALL SELECT seq, session_id, turn, kind, version, payload, prev_hash, hash FROM records WHERE session_id = ?2 AND seq <= ?1
		ORDER BY seq`
)

// extendLocked verifies the records after the verified prefix and checks the
// end of the chain against the head this Journal knows (the last record it
// wrote, or the head Finish recorded). j.mu must be held.
func (j *Journal) extendLocked(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("read journal %s: %w", j.id, err)
	}
	c := j.chain
	err := j.raw(func(dc driver.Conn) error {
		a := j.rs.args[:1]
		a[0] = driver.NamedValue{Ordinal: 1, Value: c.seq}
		return j.queryRecords(dc, selectAfter, a, func(r Record, prevHash, hash []byte) error {
			return j.extendOne(&c, r, prevHash, hash)
		})
	})
	if err != nil {
		return readError(j.id, err)
	}
	return j.acceptLocked(c)
}

// readError wraps a read's error; a broken chain is returned as it is.
func readError(id string, err error) error {
	var te *TamperedError
	if errors.As(err, &te) {
		return err
	}
	return fmt.Errorf("read journal %s: %w", id, err)
}

// extendOne verifies r as the record after c's head and appends it to c.
func (j *Journal) extendOne(c *chainState, r Record, prevHash, hash []byte) error {
	switch {
	case r.Seq != c.seq+1:
		return &TamperedError{RunID: j.id, Seq: r.Seq, Reason: fmt.Sprintf("record %d is missing", c.seq+1)}
	case string(prevHash) != string(c.head[:]):
		return &TamperedError{RunID: j.id, Seq: r.Seq, Reason: "it does not follow the record before it"}
	}
	h := j.hashLocked(c.head, r)
	if string(hash) != string(h[:]) {
		return &TamperedError{RunID: j.id, Seq: r.Seq, Reason: "its content does not match its hash"}
	}
	c.hashes = append(c.hashes, h)
	c.head, c.seq = h, r.Seq
	return nil
}

// acceptLocked checks an extended chain's end against the known head and
// makes it the verified prefix. j.mu must be held.
func (j *Journal) acceptLocked(c chainState) error {
	if j.haveHead && (c.seq != j.lastSeq || c.head != j.lastHash) {
		return &TamperedError{RunID: j.id, Seq: c.seq, Reason: fmt.Sprintf("the journal ends at record %d, but %d were written", c.seq, j.lastSeq)}
	}
	j.chain = c
	return nil
}

// checkVerified re-checks a record read again after the chain was verified:
// its content must still hash to the value verified for its seq.
func (j *Journal) checkVerified(r Record, prevHash, hash []byte) error {
	if r.Seq < 1 || r.Seq > j.chain.seq {
		return &TamperedError{RunID: j.id, Seq: r.Seq, Reason: "it is not part of the verified chain"}
	}
	want := j.chain.hashes[r.Seq-1]
	var prev [32]byte
	if r.Seq > 1 {
		prev = j.chain.hashes[r.Seq-2]
	}
	h := j.hashLocked(prev, r)
	if string(prevHash) != string(prev[:]) || string(hash) != string(want[:]) || h != want {
		return &TamperedError{RunID: j.id, Seq: r.Seq, Reason: "it changed after it was verified"}
	}
	return nil
}

// sessionRecordsLocked returns one session's records (every record for "")
// in seq order, each checked against the verified chain. j.mu must be held.
// Either way it is a single query, so a single snapshot: the rows after the
// verified prefix extend the chain, and the rows before it are re-checked
// against the hashes verified then. With two reads (extend, then read), a
// record another connection commits in between would be read but not
// verified, and an honest journal still being written would look altered.
func (j *Journal) sessionRecordsLocked(ctx context.Context, sessionID string) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read journal %s: %w", j.id, err)
	}
	q, args := selectSessionAndAfter, j.rs.args[:2]
	args[0] = driver.NamedValue{Ordinal: 1, Value: j.chain.seq}
	args[1] = driver.NamedValue{Ordinal: 2, Value: sessionID}
	if sessionID == "" {
		q, args = selectAll, nil
	}
	c := j.chain
	var out []Record
	err := j.raw(func(dc driver.Conn) error {
		return j.queryRecords(dc, q, args, func(r Record, prevHash, hash []byte) error {
			var err error
			if r.Seq <= j.chain.seq {
				err = j.checkVerified(r, prevHash, hash)
			} else {
				err = j.extendOne(&c, r, prevHash, hash)
			}
			if err != nil {
				return err
			}
			if sessionID == "" || r.SessionID == sessionID {
				out = append(out, r)
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
	if err := j.acceptLocked(c); err != nil {
		return nil, err
	}
	return out, nil
}
