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
}

// hashAt is the verified hash of record seq (all zero for 0, the hash
// before the first record). seq must be at most c.seq.
func (c *chainState) hashAt(seq int64) [32]byte {
	if seq == 0 {
		return [32]byte{}
	}
	return c.hashes[seq-1]
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
