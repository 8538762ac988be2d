package journal

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestSessionReadBackIsARangeOfTheRowid: with no index on session_id, a
// session's read-back must still never scan the records table: both halves
// of its query are ranges of the rowid (EXPLAIN QUERY PLAN says SEARCH, not
// SCAN). A scan would make reading every session of a run quadratic
// (Inspect of 2,000 examples went from 0.17 s to 21 s with a read that was
// unbounded above).
func TestSessionReadBackIsARangeOfTheRowid(t *testing.T) {
	ctx := context.Background()
	j := journalWithTurn(t, "s1")
	rows, err := j.w.conn.QueryContext(ctx, "EXPLAIN QUERY PLAN "+selectSpanAndAfter, 1, 5, "s1", 5)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	searches := 0
	for _, d := range plan {
		if strings.HasPrefix(d, "SCAN records") {
			t.Errorf("the read-back scans the table: %q", plan)
		}
		if strings.HasPrefix(d, "SEARCH records USING INTEGER PRIMARY KEY") {
			searches++
		}
	}
	if searches != 2 {
		t.Errorf("plan %q: want both halves as rowid searches", plan)
	}
}

// TestSessionSpansFollowTheChain: each session is read back whole from its
// span, interleaved with others (as concurrent examples write them), on the
// writer and again from a fresh reader of the finished file, which learns
// the spans from its own verification of the chain.
func TestSessionSpansFollowTheChain(t *testing.T) {
	ctx := context.Background()
	dir := privateTemp(t)
	j, err := Create(ctx, dir, internalMeta())
	if err != nil {
		t.Fatal(err)
	}
	const sessions = 6
	// Sessions interleaved record by record: s0's first record, s1's, ...
	for _, k := range TurnKinds {
		for i := range sessions {
			if _, err := j.Append(ctx, Record{SessionID: fmt.Sprintf("s%d", i), Turn: 1, Kind: k, Version: SchemaVersion, Payload: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		// Reading one session back part way extends the chain: spans grow.
		if _, err := j.Records(ctx, "s0"); err != nil {
			t.Fatal(err)
		}
	}
	check := func(j *Journal, when string) {
		t.Helper()
		for i := range sessions {
			id := fmt.Sprintf("s%d", i)
			recs, err := j.Records(ctx, id)
			if err != nil {
				t.Fatalf("%s: %s: %v", when, id, err)
			}
			if len(recs) != len(TurnKinds) {
				t.Fatalf("%s: %s: %d records, want %d", when, id, len(recs), len(TurnKinds))
			}
			for n, r := range recs {
				if r.SessionID != id || r.Kind != TurnKinds[n] {
					t.Errorf("%s: %s record %d is %s %s", when, id, n, r.SessionID, r.Kind)
				}
			}
			if sp := j.chain.spanOf(id); sp.first != int64(i+1) || sp.last != int64((len(TurnKinds)-1)*sessions+i+1) {
				t.Errorf("%s: %s span %+v", when, id, sp)
			}
		}
	}
	check(j, "while written")
	id := j.ID()
	if err := j.Finish(ctx, StatusFinished); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, dir, id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if sp := r.chain.spanOf("s3"); sp != (span{1, 0}) {
		t.Errorf("a fresh reader knows a span before verifying anything: %+v", sp)
	}
	check(r, "reopened")
}
