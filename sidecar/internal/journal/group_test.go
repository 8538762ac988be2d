package journal_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// TestConcurrentAppendsAreGroupCommittedInOrder: eight writers appending at
// once (as concurrent examples do) each get their records committed in
// their own order, every sequence number is used once, and the chain
// verifies, in this Journal and after Finish in a fresh Open.
func TestConcurrentAppendsAreGroupCommittedInOrder(t *testing.T) {
	ctx := context.Background()
	dir := privateDir(t)
	j := create(t, dir)
	const writers, each = 8, 60
	seqs := make([][]int64, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				seq, err := j.Append(ctx, journal.Record{SessionID: fmt.Sprintf("s%d", w), Turn: 1, Kind: journal.KindTurnStarted, Version: 1, Payload: fmt.Appendf(nil, `{"i":%d}`, i)})
				if err != nil {
					t.Error(err)
					return
				}
				seqs[w] = append(seqs[w], seq)
			}
		})
	}
	wg.Wait()
	var all []int64
	for w, s := range seqs {
		if !slices.IsSorted(s) || len(s) != each {
			t.Fatalf("writer %d: seqs %v", w, s)
		}
		all = append(all, s...)
		recs, err := j.Records(ctx, fmt.Sprintf("s%d", w))
		if err != nil || len(recs) != each {
			t.Fatalf("writer %d: %d records, %v", w, len(recs), err)
		}
		for i, r := range recs {
			if r.Seq != s[i] || string(r.Payload) != fmt.Sprintf(`{"i":%d}`, i) {
				t.Fatalf("writer %d record %d: seq %d payload %s, want seq %d", w, i, r.Seq, r.Payload, s[i])
			}
		}
	}
	slices.Sort(all)
	for i, s := range all {
		if s != int64(i+1) {
			t.Fatalf("sequence numbers %v...: %d at %d", all[:min(len(all), 10)], s, i)
		}
	}
	if err := j.Finish(ctx, journal.StatusFinished); err != nil {
		t.Fatal(err)
	}
	o, err := journal.Open(ctx, dir, j.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Verify(ctx); err != nil {
		t.Fatalf("verify after concurrent appends: %v", err)
	}
}

// TestAppendAllIsOneCommitOrNothing: AppendAll gives consecutive sequence
// numbers; an invalid record in the batch writes none of it.
func TestAppendAllIsOneCommitOrNothing(t *testing.T) {
	ctx := context.Background()
	j := create(t, privateDir(t))
	rec := func(kind journal.Kind) journal.Record {
		return journal.Record{SessionID: "s", Turn: 1, Kind: kind, Version: 1, Payload: []byte(`{}`)}
	}
	seqs, err := j.AppendAll(ctx, []journal.Record{rec(journal.KindTurnStarted), rec(journal.KindModelRequest), rec(journal.KindModelCompletion)})
	if err != nil || !slices.Equal(seqs, []int64{1, 2, 3}) {
		t.Fatalf("seqs %v err %v", seqs, err)
	}
	bad := rec(journal.KindTurnTerminal)
	bad.Version = 0
	if _, err := j.AppendAll(ctx, []journal.Record{rec(journal.KindTurnTerminal), bad}); err == nil {
		t.Fatal("a batch with an invalid record was accepted")
	}
	recs, err := j.Records(ctx, "")
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records after the refused batch, want 3 (%v)", len(recs), err)
	}
	if seq, err := j.Append(ctx, rec(journal.KindTurnTerminal)); err != nil || seq != 4 {
		t.Fatalf("next append: seq %d err %v", seq, err)
	}
}

// TestReadingARunningJournalNeverLooksAltered: a second connection reading
// every record of a journal while its writer appends (kmx journal inspect on
// a running run, or a watcher in a test) sees a verified prefix, never a
// false "altered" report for a record committed between its reads.
func TestReadingARunningJournalNeverLooksAltered(t *testing.T) {
	ctx := context.Background()
	dir := privateDir(t)
	j := create(t, dir)
	r, err := journal.Open(ctx, dir, j.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const n = 400
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if _, err := j.Append(ctx, journal.Record{SessionID: "s", Turn: 1, Kind: journal.KindTurnStarted, Version: 1, Payload: fmt.Appendf(nil, `{"i":%d}`, i)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	last := 0
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		recs, err := r.Records(ctx, "")
		if err != nil {
			t.Fatalf("after %d records: %v", last, err)
		}
		if len(recs) < last {
			t.Fatalf("read %d records after %d", len(recs), last)
		}
		last = len(recs)
	}
	if last != n {
		t.Errorf("last read saw %d records, want %d", last, n)
	}
}
