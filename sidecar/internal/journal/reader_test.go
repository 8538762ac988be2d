package journal_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/journal/journaltest"
)

// TestReadBackCatchesTamperingOnEitherConnection: what a read-back catches
// is the same whether it reads on the reader (a commit in progress) or on
// the idle writer's connection. Each case first reads session s1 back (so
// records 1-10 are the verified prefix, as after an example's
// verification), then alters the file and reads again: a verified record
// changed, a record after the prefix changed, the last record deleted, a
// changed record with the chain rebuilt, and a record appended that the
// writer never wrote but that chains correctly.
func TestReadBackCatchesTamperingOnEitherConnection(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, db string)
		// sessions: Sessions catches it too. Sessions checks only the
		// records after the verified prefix, so a change to a verified
		// record is caught by the next read of that record, not by it.
		sessions bool
	}{
		{"verified record of the session changed", func(t *testing.T, db string) {
			journaltest.UpdatePayload(t, db, 3, []byte(`{"text":"forged"}`))
		}, false},
		{"record after the verified prefix changed", func(t *testing.T, db string) {
			journaltest.UpdatePayload(t, db, 12, []byte(`{"text":"forged"}`))
		}, true},
		{"last record deleted", func(t *testing.T, db string) { journaltest.DeleteRecord(t, db, 15) }, true},
		{"verified record changed and the chain rebuilt", func(t *testing.T, db string) {
			journaltest.UpdatePayload(t, db, 3, []byte(`{}`))
			journaltest.RehashChain(t, db)
		}, true},
		{"well-chained record appended", func(t *testing.T, db string) {
			journaltest.AppendForged(t, db, journal.Record{SessionID: "s1", Turn: 2, Kind: journal.KindTurnTerminal, Version: 1, Payload: []byte(`{"turn":2,"state":"completed","answer":"forged"}`)})
		}, true},
	}
	for _, tt := range tests {
		for _, onReader := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/reader=%v", tt.name, onReader), func(t *testing.T) {
				ctx := context.Background()
				j := create(t, privateDir(t))
				read := func() ([]journal.Record, error) {
					if onReader {
						defer journal.HoldCommitLock(j)()
					}
					return j.Records(ctx, "s1")
				}
				turn(t, j, "s1", 1)
				turn(t, j, "s2", 1)
				if recs, err := read(); err != nil || len(recs) != 5 {
					t.Fatalf("read back before tampering: %d records, %v", len(recs), err)
				}
				turn(t, j, "s3", 1)
				tt.tamper(t, j.Path())
				recs, err := read()
				if !errors.Is(err, journal.ErrTampered) || recs != nil {
					t.Fatalf("Records after tampering: %d records, error %v; want ErrTampered", len(recs), err)
				}
				if journal.ReaderOpen(j) != onReader {
					t.Fatalf("the reader is open: %v, want %v", journal.ReaderOpen(j), onReader)
				}
				if _, err := j.Sessions(ctx); tt.sessions && !errors.Is(err, journal.ErrTampered) {
					t.Fatalf("Sessions after tampering: %v; want ErrTampered", err)
				}
			})
		}
	}
}

// TestConcurrentReadBacksBesideAppendsNeverLookAltered: eight examples at
// once, each committing its turn in two groups and reading its session back
// after each (as the Sessions service does), while the others keep
// committing: every read-back sees exactly the records its caller
// committed, never a false "altered", and the journal verifies whole
// afterwards. Run with -race, it also checks the reader's and the writer's
// state are kept apart.
func TestConcurrentReadBacksBesideAppendsNeverLookAltered(t *testing.T) {
	ctx := context.Background()
	j := create(t, privateDir(t))
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				session := fmt.Sprintf("w%d-%d", w, i)
				rec := func(k journal.Kind) journal.Record {
					return journal.Record{SessionID: session, Turn: 1, Kind: k, Version: 1, Payload: fmt.Appendf(nil, `{"k":%q}`, k)}
				}
				first, err := j.AppendAll(ctx, []journal.Record{rec(journal.KindSessionPlaced), rec(journal.KindTurnStarted), rec(journal.KindModelRequest)})
				if err != nil {
					t.Error(err)
					return
				}
				if recs, err := j.Records(ctx, session); err != nil || len(recs) != 3 || recs[0].Seq != first[0] {
					t.Errorf("%s after its first commit: %d records, %v", session, len(recs), err)
					return
				}
				if _, err := j.AppendAll(ctx, []journal.Record{rec(journal.KindModelCompletion), rec(journal.KindTurnTerminal)}); err != nil {
					t.Error(err)
					return
				}
				recs, err := j.Records(ctx, session)
				if err != nil || len(recs) != 5 {
					t.Errorf("%s after its second commit: %d records, %v", session, len(recs), err)
					return
				}
				for k, r := range recs {
					if r.Kind != journal.TurnKinds[k] || r.SessionID != session {
						t.Errorf("%s record %d is %s of %s", session, k, r.Kind, r.SessionID)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := j.Verify(ctx); err != nil {
		t.Fatalf("Verify after concurrent read-backs: %v", err)
	}
	recs, err := j.Records(ctx, "")
	if err != nil || len(recs) != workers*each*5 {
		t.Fatalf("%d records in all, want %d (%v)", len(recs), workers*each*5, err)
	}
}
