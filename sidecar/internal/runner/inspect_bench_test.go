package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
)

// BenchmarkInspect2000 is Inspect of one finished Test run of 2,000
// examples on the fake model (2,000 agent turns, 10,000 records), the
// target being at most 1 s per Inspect. Journaling the run is setup and
// not timed.
func BenchmarkInspect2000(b *testing.B) {
	const n = 2000
	home := filepath.Join(b.TempDir(), "kmx")
	if err := os.Mkdir(home, 0o700); err != nil {
		b.Fatal(err)
	}
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, invocation.Request{Path: "generated.agent.md", Source: generatedAgent(n)})
	if err != nil || rep.Verdict != VerdictPass {
		b.Fatalf("setup run: %v %s", err, rep.Verdict)
	}
	dir := journal.Dir(home)
	cpu0, cpuOK := inspectCPU()
	for b.Loop() {
		in, err := readback.Inspect(context.Background(), dir, rep.RunID)
		if err != nil {
			b.Fatal(err)
		}
		if in.Summary.Verified != n || in.LiveCalls != 0 {
			b.Fatalf("summary %+v live %d", in.Summary, in.LiveCalls)
		}
	}
	if cpu1, ok := inspectCPU(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	}
}
