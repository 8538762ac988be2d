package journal_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// turnPayloads are the five records of a typical tool-free turn: 300 bytes
// of instructions, a 40-byte input and a 60-byte answer.
func turnPayloads(b *testing.B, session string) [5][]byte {
	b.Helper()
	instr := strings.Repeat("Reply with exactly `hello` followed by the input. ", 6)[:300]
	input := strings.Repeat("i", 40)
	answer := strings.Repeat("a", 60)
	model := journal.ModelIdentity{Route: "fake", Model: "fake"}
	sum := sha256.Sum256([]byte(instr + input))
	vs := []any{
		journal.SessionPlaced{SessionID: session, Harness: "chat", Purpose: "agent", ExampleID: "greets-by-name", Model: model},
		journal.TurnStarted{Turn: 1, Instructions: instr, Input: input, Model: model},
		journal.ModelRequest{Turn: 1, Model: "fake", SHA256: hex.EncodeToString(sum[:]), Bytes: 420},
		journal.ModelCompletion{Turn: 1, Model: "fake", Text: answer, FinishReason: "stop"},
		journal.TurnTerminal{Turn: 1, State: journal.StateCompleted, Answer: answer},
	}
	var out [5][]byte
	for i, v := range vs {
		p, err := journal.Encode(v)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = p
	}
	return out
}

// BenchmarkAppendTurn measures one op = one turn's five Appends, each
// committed. It reports the journal's size per turn after Finish's
// checkpoint (the fixed schema pages are amortized over b.N turns).
func BenchmarkAppendTurn(b *testing.B) {
	ctx := context.Background()
	dir := privateDir(b)
	j, err := journal.Create(ctx, dir, testMeta())
	if err != nil {
		b.Fatal(err)
	}
	payloads := turnPayloads(b, "00000000-0000-0000-0000-000000000000")
	turns := 0
	cpu0, haveCPU := cpuTime()
	b.ReportAllocs()
	for b.Loop() {
		// A fresh, UUID-length session per turn, as each example gets.
		session := fmt.Sprintf("%08x-0000-4000-8000-000000000000", turns)
		for i, k := range journal.TurnKinds {
			if _, err := j.Append(ctx, journal.Record{SessionID: session, Turn: 1, Kind: k, Version: journal.SchemaVersion, Payload: payloads[i]}); err != nil {
				b.Fatal(err)
			}
		}
		turns++
	}
	b.StopTimer()
	cpu1, _ := cpuTime()
	if err := j.Finish(ctx, journal.StatusFinished); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(j.Path())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/float64(turns), "journal-B/turn")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(turns), "µs/turn")
	if haveCPU {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(turns), "cpu-µs/turn")
	}
}

// turnJournal is a new journal for the turn benchmarks, the context their
// calls run under (cancellable, as a gRPC request's is) and one turn's
// five payloads.
func turnJournal(b *testing.B) (*journal.Journal, context.Context, [5][]byte) {
	j, err := journal.Create(context.Background(), privateDir(b), testMeta())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return j, ctx, turnPayloads(b, "00000000-0000-0000-0000-000000000000")
}

// BenchmarkTurnCommits measures one op = what the Sessions service does
// with the journal per example: two AppendAll commits (session.placed,
// turn.started and model.request before the send; model.completion and
// turn.terminal after it) and one verified read-back of the session, each
// under a cancellable context as a gRPC request's is.
func BenchmarkTurnCommits(b *testing.B) {
	j, ctx, payloads := turnJournal(b)
	turns := 0
	cpu0, haveCPU := cpuTime()
	b.ReportAllocs()
	for b.Loop() {
		session := fmt.Sprintf("%08x-0000-4000-8000-000000000000", turns)
		rec := func(i int) journal.Record {
			return journal.Record{SessionID: session, Turn: 1, Kind: journal.TurnKinds[i], Version: journal.SchemaVersion, Payload: payloads[i]}
		}
		if _, err := j.AppendAll(ctx, []journal.Record{rec(0), rec(1), rec(2)}); err != nil {
			b.Fatal(err)
		}
		if _, err := j.AppendAll(ctx, []journal.Record{rec(3), rec(4)}); err != nil {
			b.Fatal(err)
		}
		recs, err := j.Records(ctx, session)
		if err != nil || len(recs) != 5 {
			b.Fatalf("read back %d records: %v", len(recs), err)
		}
		turns++
	}
	b.StopTimer()
	cpu1, _ := cpuTime()
	if err := j.Finish(context.Background(), journal.StatusFinished); err != nil {
		b.Fatal(err)
	}
	if haveCPU {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(turns), "cpu-µs/turn")
	}
}

// BenchmarkTurnCommitsConcurrent is BenchmarkTurnCommits with four
// examples in flight at once, as `kmx test` runs them by default: one op is
// one example's two commits and read-back, on whichever of the four
// goroutines. Commits group and read-backs run beside them, so wall time
// per op (ns/op) is the figure to compare with CPU per op.
func BenchmarkTurnCommitsConcurrent(b *testing.B) {
	j, ctx, payloads := turnJournal(b)
	var turns atomic.Int64
	cpu0, haveCPU := cpuTime()
	b.ReportAllocs()
	// Four goroutines on this 2-core machine (GOMAXPROCS × 2).
	b.SetParallelism(max(1, 4/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			session := fmt.Sprintf("%08x-0000-4000-8000-000000000000", turns.Add(1))
			rec := func(i int) journal.Record {
				return journal.Record{SessionID: session, Turn: 1, Kind: journal.TurnKinds[i], Version: journal.SchemaVersion, Payload: payloads[i]}
			}
			if _, err := j.AppendAll(ctx, []journal.Record{rec(0), rec(1), rec(2)}); err != nil {
				b.Error(err)
				return
			}
			if _, err := j.AppendAll(ctx, []journal.Record{rec(3), rec(4)}); err != nil {
				b.Error(err)
				return
			}
			recs, err := j.Records(ctx, session)
			if err != nil || len(recs) != 5 {
				b.Errorf("read back %d records: %v", len(recs), err)
				return
			}
		}
	})
	b.StopTimer()
	cpu1, _ := cpuTime()
	if fi, err := os.Stat(j.Path() + "-wal"); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "wal-MiB")
	}
	if err := j.Finish(context.Background(), journal.StatusFinished); err != nil {
		b.Fatal(err)
	}
	if haveCPU {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(turns.Load()), "cpu-µs/turn")
	}
}
