package journal

// chainState is the part of the hash chain this Journal has verified from
// disk: every record up to seq, with each record's hash kept in memory.
// Verification extends it with the records written since the last check, so
// reading a session costs the size of the session plus the new records, not
// the size of the journal; a run of n examples stays O(n) overall.
type chainState struct {
	seq    int64
	head   [32]byte
	hashes [][32]byte // hashes[i] is the hash of record i+1
	// spans is where each session's records lie in the verified chain,
	// from its first to its last: reading a session back reads that range
	// of the rowid (sessionRecordsLocked), so the records table needs no
	// index on session_id that every append would have to update. Only
	// records whose hash was checked are entered.
	spans map[string]span
}

// hashAt is the verified hash of record seq (all zero for 0, the hash
// before the first record). seq must be at most c.seq.
func (c *chainState) hashAt(seq int64) [32]byte {
	if seq == 0 {
		return [32]byte{}
	}
	return c.hashes[seq-1]
}

// span is the seqs of a session's first and last verified records.
type span struct{ first, last int64 }

// spanOf is where session's verified records lie; {1, 0}, an empty range,
// when none of them is verified yet (all of them, if any, come after the
// verified prefix).
func (c *chainState) spanOf(session string) span {
	if s, ok := c.spans[session]; ok {
		return s
	}
	return span{1, 0}
}

// note enters rec, verified, in its session's span. The chain is verified
// in seq order, so rec is the session's last record so far.
func (c *chainState) note(rec Record) {
	if c.spans == nil {
		c.spans = make(map[string]span)
	}
	s, ok := c.spans[rec.SessionID]
	if !ok {
		s.first = rec.Seq
	}
	s.last = rec.Seq
	c.spans[rec.SessionID] = s
}

// The reads verification makes on every turn, prepared once per Journal.
const (
	selectAfter = `SELECT seq, session_id, turn, kind, version, payload, prev_hash, hash FROM records WHERE seq > ? ORDER BY seq`
	selectAll   = `SELECT seq, session_id, turn, kind, version, payload, prev_hash, hash FROM records ORDER BY seq`
	// selectSpanAndAfter is one session's records in its verified span and
	// every record after the verified prefix, in one read: what reading a
	// session back after a turn needs (its rows and the chain extension).
	// Both halves are ranges of the rowid (an OR would make SQLite scan the
	// whole table).
	selectSpanAndAfter = `SELECT seq, session_id, turn, kind, version, payload, prev_hash, hash FROM records WHERE seq BETWEEN ?1 AND ?2 AND session_id = ?3
		UNION ALL SELECT seq, session_id, turn, kind, version, payload, prev_hash, hash FROM records WHERE seq > ?4
		ORDER BY seq`
)
