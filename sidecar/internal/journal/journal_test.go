package journal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/journal/journaltest"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

func testMeta() journal.RunMeta {
	return journal.RunMeta{KmxVersion: "0.0.0-test", AgentID: "greeter", AgentRevision: "sha256:abc", Command: "test"}
}

// privateDir is a journal folder as EnsureDir would leave it.
func privateDir(t testing.TB) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func create(t testing.TB, dir string) *journal.Journal {
	t.Helper()
	j, err := journal.Create(context.Background(), dir, testMeta())
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// turn appends the five records of one chat turn.
func turn(t testing.TB, j *journal.Journal, session string, n int) []int64 {
	t.Helper()
	var seqs []int64
	for _, k := range journal.TurnKinds {
		seq, err := j.Append(context.Background(), journal.Record{
			SessionID: session, Turn: n, Kind: k, Version: journal.SchemaVersion,
			Payload: fmt.Appendf(nil, `{"kind":%q,"session":%q,"turn":%d}`, k, session, n),
		})
		if err != nil {
			t.Fatalf("Append %s: %v", k, err)
		}
		seqs = append(seqs, seq)
	}
	return seqs
}

func TestCreateAppendRecordsFinishOpen(t *testing.T) {
	ctx := context.Background()
	dir := privateDir(t)
	j := create(t, dir)
	if !journal.ValidRunID(j.ID()) {
		t.Fatalf("ID %q is not a valid run ID", j.ID())
	}
	if want := filepath.Join(dir, j.ID()+".db"); j.Path() != want {
		t.Fatalf("Path = %q, want %q", j.Path(), want)
	}
	if got := turn(t, j, "s-b", 1); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("first turn seqs = %v", got)
	}
	turn(t, j, "s-a", 1)
	turn(t, j, "s-b", 2)

	sessions, err := j.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sessions, []string{"s-b", "s-a"}) {
		t.Fatalf("Sessions = %v, want placement order [s-b s-a]", sessions)
	}
	recs, err := j.Records(ctx, "s-b")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 10 {
		t.Fatalf("s-b has %d records, want 10", len(recs))
	}
	for i, r := range recs {
		if r.SessionID != "s-b" || r.Kind != journal.TurnKinds[i%5] || r.Turn != 1+i/5 {
			t.Fatalf("record %d = %+v", i, r)
		}
		if i > 0 && r.Seq <= recs[i-1].Seq {
			t.Fatalf("records not in seq order: %d after %d", r.Seq, recs[i-1].Seq)
		}
	}
	if err := j.Finish(ctx, journal.StatusFinished); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, j.ID()+".lock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock file after Finish: %v, want it removed", err)
	}

	r, err := journal.Open(ctx, dir, j.ID())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	if r.Status() != journal.StatusFinished {
		t.Fatalf("Status = %q", r.Status())
	}
	if m := r.Meta(); m.AgentID != "greeter" || m.Command != "test" || m.Label != journal.Label || m.KmxVersion != "0.0.0-test" || m.AgentRevision != "sha256:abc" {
		t.Fatalf("Meta = %+v", m)
	}
	all, err := r.Records(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 15 {
		t.Fatalf("reopened journal has %d records, want 15", len(all))
	}
	again, err := r.Records(ctx, "s-b")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(again, recs, func(a, b journal.Record) bool {
		return a.Seq == b.Seq && a.Kind == b.Kind && string(a.Payload) == string(b.Payload)
	}) {
		t.Fatal("reopened records differ from the written ones")
	}
	if err := r.Verify(ctx); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if _, err := r.Append(ctx, journal.Record{SessionID: "x", Kind: "k", Version: 1}); err == nil {
		t.Fatal("Append on an opened journal succeeded; it must be read-only")
	}
}

func TestTamperingIsDetected(t *testing.T) {
	tests := []struct {
		name         string
		finishFirst  bool // tamper with a finished journal reopened by Open
		tamper       func(t *testing.T, db string)
		wantTampered bool
	}{
		{"update payload, live", false, func(t *testing.T, db string) { journaltest.UpdatePayload(t, db, 7, []byte(`{"text":"forged"}`)) }, true},
		{"delete middle record, live", false, func(t *testing.T, db string) { journaltest.DeleteRecord(t, db, 7) }, true},
		{"delete last record, live", false, func(t *testing.T, db string) { journaltest.DeleteRecord(t, db, 10) }, true},
		{"update and rehash, live", false, func(t *testing.T, db string) {
			journaltest.UpdatePayload(t, db, 7, []byte(`{}`))
			journaltest.RehashChain(t, db)
		}, true},
		{"update payload, finished", true, func(t *testing.T, db string) { journaltest.UpdatePayload(t, db, 3, []byte(`{}`)) }, true},
		{"delete first record, finished", true, func(t *testing.T, db string) { journaltest.DeleteRecord(t, db, 1) }, true},
		{"delete last record, finished", true, func(t *testing.T, db string) { journaltest.DeleteRecord(t, db, 10) }, true},
		// A tamperer who knows the scheme can rebuild the chain and its
		// recorded head: the chain alone cannot catch it, replay must.
		{"delete and rehash, finished", true, func(t *testing.T, db string) {
			journaltest.DeleteRecord(t, db, 4)
			journaltest.RehashChain(t, db)
		}, false},
		{"no tampering, finished", true, func(t *testing.T, db string) {}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := privateDir(t)
			j := create(t, dir)
			turn(t, j, "s1", 1)
			turn(t, j, "s2", 1)
			if tt.finishFirst {
				if err := j.Finish(ctx, journal.StatusFinished); err != nil {
					t.Fatal(err)
				}
				tt.tamper(t, j.Path())
				var err error
				if j, err = journal.Open(ctx, dir, j.ID()); err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer j.Close()
			} else {
				tt.tamper(t, j.Path())
			}
			recs, err := j.Records(ctx, "s1")
			_, sessErr := j.Sessions(ctx)
			if got := errors.Is(err, journal.ErrTampered); got != tt.wantTampered {
				t.Fatalf("Records error = %v; tampered = %v, want %v", err, got, tt.wantTampered)
			}
			if got := errors.Is(sessErr, journal.ErrTampered); got != tt.wantTampered {
				t.Fatalf("Sessions error = %v; tampered = %v, want %v", sessErr, got, tt.wantTampered)
			}
			if tt.wantTampered && recs != nil {
				t.Fatalf("Records returned %d records with a broken chain", len(recs))
			}
			var te *journal.TamperedError
			if tt.wantTampered && (!errors.As(err, &te) || te.RunID != j.ID()) {
				t.Fatalf("error %v does not name the run", err)
			}
		})
	}
}

func TestAppendValidation(t *testing.T) {
	j := create(t, privateDir(t))
	tests := []struct {
		name string
		r    journal.Record
		want string
	}{
		{"no session", journal.Record{Kind: journal.KindTurnStarted, Version: 1}, "no session ID"},
		{"no kind", journal.Record{SessionID: "s", Version: 1}, "no kind"},
		{"negative turn", journal.Record{SessionID: "s", Kind: "k", Turn: -1, Version: 1}, "negative turn"},
		{"version zero", journal.Record{SessionID: "s", Kind: "k"}, "version 0"},
		{"oversized", journal.Record{SessionID: "s", Kind: "k", Version: 1, Payload: make([]byte, 9<<20)}, "over the"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := j.Append(context.Background(), tt.r)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Append error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	// A refused record must not consume a seq.
	seq, err := j.Append(context.Background(), journal.Record{SessionID: "s", Kind: "k", Version: 1})
	if err != nil || seq != 1 {
		t.Fatalf("Append after refusals = %d, %v; want seq 1", seq, err)
	}
}

func TestConcurrentAppendKeepsOneChain(t *testing.T) {
	ctx := context.Background()
	j := create(t, privateDir(t))
	const workers, each = 8, 40
	var wg sync.WaitGroup
	seqs := make([][]int64, workers)
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				seq, err := j.Append(ctx, journal.Record{SessionID: fmt.Sprintf("s%d", w), Turn: i, Kind: journal.KindTurnStarted, Version: 1, Payload: []byte("{}")})
				if err != nil {
					errs[w] = err
					return
				}
				seqs[w] = append(seqs[w], seq)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var all []int64
	for _, s := range seqs {
		all = append(all, s...)
	}
	slices.Sort(all)
	for i, s := range all {
		if s != int64(i+1) {
			t.Fatalf("seqs are not 1..%d without gaps or repeats: position %d holds %d", workers*each, i, s)
		}
	}
	recs, err := j.Records(ctx, "")
	if err != nil || len(recs) != workers*each {
		t.Fatalf("Records = %d, %v; want %d verified records", len(recs), err, workers*each)
	}
}

func TestFinishAndCloseLifecycle(t *testing.T) {
	ctx := context.Background()
	dir := privateDir(t)
	j := create(t, dir)
	if err := j.Finish(ctx, "done"); err == nil || !strings.Contains(err.Error(), `"done"`) {
		t.Fatalf("Finish with an unknown status = %v, want a refusal naming it", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	// A cancelled run must still be able to record that it was cancelled.
	if err := j.Finish(cctx, journal.StatusCancelled); err != nil {
		t.Fatalf("Finish(cancelled ctx): %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("Close after Finish: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := j.Finish(ctx, journal.StatusFinished); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("second Finish = %v, want ErrClosed", err)
	}
	if _, err := j.Append(ctx, journal.Record{SessionID: "s", Kind: "k", Version: 1}); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("Append after Finish = %v, want ErrClosed", err)
	}
	if _, err := j.Records(ctx, ""); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("Records after Finish = %v, want ErrClosed", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != j.ID()+".db" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("after Finish the folder holds %v, want only %s.db", names, j.ID())
	}
	r, err := journal.Open(ctx, dir, j.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Status() != journal.StatusCancelled {
		t.Fatalf("Status = %q, want cancelled", r.Status())
	}
}

func TestCreateRefusesUnsafeFolders(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T) string
		problem string // in the UnsafeError, or "" for a plain error
	}{
		{"group-readable folder", func(t *testing.T) string {
			d := privateDir(t)
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
			return d
		}, "mode 0755"},
		{"symlinked folder", func(t *testing.T) string {
			d := privateDir(t)
			real := filepath.Join(d, "real")
			if err := os.Mkdir(real, 0o700); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(d, "link")
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "symbolic link"},
		{"missing folder", func(t *testing.T) string { return filepath.Join(privateDir(t), "nope") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t)
			j, err := journal.Create(context.Background(), dir, testMeta())
			if err == nil {
				_ = j.Close()
				t.Fatal("Create succeeded in an unsafe folder")
			}
			var ue *state.UnsafeError
			if tt.problem != "" && (!errors.As(err, &ue) || !strings.Contains(ue.Problem, tt.problem)) {
				t.Fatalf("Create error = %v, want an UnsafeError about %q", err, tt.problem)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("a refused Create left %d files behind", len(entries))
			}
		})
	}
}

func TestCreateRefusesBadMeta(t *testing.T) {
	dir := privateDir(t)
	tests := []struct {
		name string
		edit func(*journal.RunMeta)
		want string
	}{
		{"other label", func(m *journal.RunMeta) { m.Label = "production" }, "local preview"},
		{"no agent", func(m *journal.RunMeta) { m.AgentID = "" }, "agent ID"},
		{"odd command", func(m *journal.RunMeta) { m.Command = "Run; DROP" }, "command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMeta()
			tt.edit(&m)
			if _, err := journal.Create(context.Background(), dir, m); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Create error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("refused Creates left %d files behind", len(entries))
	}
}

func TestRunIDs(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"20261130T162341.123456789Z-0a1b2c3d", true},
		{"20261130T162341.123456789Z-0A1B2C3D", false},
		{"20261130T162341.12345678Z-0a1b2c3d", false},
		{"../20261130T162341.123456789Z-0a1b", false},
		{"20261130T162341.123456789Z-0a1b2c3d.db", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := journal.ValidRunID(tt.id); got != tt.want {
			t.Errorf("ValidRunID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
	dir := privateDir(t)
	var ids []string
	for range 3 {
		j := create(t, dir)
		ids = append(ids, j.ID())
		if err := j.Finish(context.Background(), journal.StatusFinished); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.IsSorted(ids) {
		t.Fatalf("run IDs do not sort in creation order: %v", ids)
	}
}
