package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// BenchmarkJournalListBinary execs the real kmx binary's `journal list
// --json` over a folder of 20 finished runs of 100 turns each: one op is a
// whole process (start, state checks, 20 lock probes and meta reads, JSON).
// The target is at most 50 ms per list; `kmx version` is measured beside it
// as the floor every kmx process pays before doing anything.
func BenchmarkJournalListBinary(b *testing.B) {
	bin := kmxBinary(b)
	h := filepath.Join(b.TempDir(), "kmx")
	if err := os.Mkdir(h, 0o700); err != nil {
		b.Fatal(err)
	}
	dir, err := journal.EnsureDir(h)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for range journal.KeepRuns {
		j, err := journal.Create(ctx, dir, journal.RunMeta{KmxVersion: "b", AgentID: "bench", AgentRevision: "r", Command: "test"})
		if err != nil {
			b.Fatal(err)
		}
		for s := range 100 {
			for _, k := range journal.TurnKinds {
				if _, err := j.Append(ctx, journal.Record{SessionID: fmt.Sprintf("s%d", s), Turn: 1, Kind: k, Version: 1, Payload: []byte(`{"x":1}`)}); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := j.Finish(ctx, journal.StatusFinished); err != nil {
			b.Fatal(err)
		}
	}
	// kmx version is the floor: the same process start with no work.
	for _, c := range []struct {
		name    string
		args    []string
		minSize int
	}{{"version", []string{"version"}, 1}, {"list-20-runs", []string{"journal", "list", "--json"}, 5000}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(bin, c.args...)
				cmd.Env = append(os.Environ(), "KMX_HOME="+h)
				if out, err := cmd.Output(); err != nil || len(out) < c.minSize {
					b.Fatalf("kmx %v: %v\n%s", c.args, err, out)
				}
			}
		})
	}
}
