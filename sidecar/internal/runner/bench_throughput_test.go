//go:build linux

package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// BenchmarkSlowEndpoint is what users feel with a real model: 50 examples
// against a local endpoint that answers each request after 200 ms, through
// Test in this process, at concurrency 1, the default and 8. The floor at
// concurrency c is ceil(50/c) × 200 ms (1.25 s at 8).
func BenchmarkSlowEndpoint(b *testing.B) {
	const n, delay = 50, 200 * time.Millisecond
	srv := newChatServer(b, false, func(c chatCall) chatReply {
		time.Sleep(delay)
		return echo(c)
	})
	src := []byte(strings.Replace(string(generatedAgent(n)), "model: fake", "model: kmx-slow-model", 1))
	for _, c := range []int{1, invocation.DefaultConcurrency, 8} {
		b.Run(fmt.Sprintf("examples=%d/concurrency=%d", n, c), func(b *testing.B) {
			home := testutil.PrivateDir(b)
			opts := Options{Options: invocation.Options{StateDir: home, Endpoint: srv.base(), Concurrency: c}}
			for b.Loop() {
				rep, err := Test(context.Background(), opts, invocation.Request{Path: "slow.agent.md", Source: src})
				if err != nil || rep.Verdict != VerdictPass {
					b.Fatalf("verdict %v err %v", rep.Verdict, err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
		})
	}
}

// BenchmarkCompatibleVsFloor runs, as whole processes and in pairs, `kmx
// test --concurrency C` on a file of N examples (three text assertions
// each) against a local endpoint on 127.0.0.1 that answers instantly, and
// the floor program (testdata/floor: POST, parse, three assertions, five
// rows in one SQLite WAL transaction per example) against the same
// endpoint. Each op is one pair; it reports the median of the pairs'
// wall times, their ratio, and kmx's peak RSS.
//
//	go test -run '^$' -bench CompatibleVsFloor -benchtime 5x ./sidecar/internal/runner/
func BenchmarkCompatibleVsFloor(b *testing.B) {
	kmx, err := kmxBinaryOnce()
	if err != nil {
		b.Fatal(err)
	}
	floor := filepath.Join(b.TempDir(), "floor")
	if out, err := exec.Command("go", "build", "-o", floor, "./testdata/floor").CombinedOutput(); err != nil {
		b.Fatalf("build the floor program: %v\n%s", err, out)
	}
	srv := newChatServer(b, false, echo)
	peak := testutil.NewPeakRSS(b)
	for _, bc := range []struct{ n, c int }{{200, 1}, {2000, 1}, {2000, 8}} {
		b.Run(fmt.Sprintf("examples=%d/concurrency=%d", bc.n, bc.c), func(b *testing.B) {
			dir := b.TempDir()
			file := filepath.Join(dir, "generated.agent.md")
			src := strings.Replace(string(generatedAgent(bc.n)), "model: fake", "model: kmx-bench-model", 1)
			if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
				b.Fatal(err)
			}
			home := testutil.PrivateDir(b)
			var kmxT, floorT, ratio []float64
			var rss int64
			for i := 0; b.Loop(); i++ {
				cmd := exec.Command(kmx, "test", file, "--endpoint", srv.base(), "--concurrency", strconv.Itoa(bc.c))
				cmd.Env = append(os.Environ(), "KMX_HOME="+home)
				start := time.Now()
				out, kib, err := peak.Run(cmd)
				if err != nil {
					b.Fatalf("kmx test: %v\n%s", err, out)
				}
				k := time.Since(start).Seconds()
				rss = max(rss, kib)
				db := filepath.Join(dir, fmt.Sprintf("floor-%d.db", i))
				start = time.Now()
				if out, err := exec.Command(floor, "-endpoint", srv.base(), "-n", strconv.Itoa(bc.n), "-db", db).CombinedOutput(); err != nil {
					b.Fatalf("floor: %v\n%s", err, out)
				}
				f := time.Since(start).Seconds()
				kmxT, floorT, ratio = append(kmxT, k), append(floorT, f), append(ratio, k/f)
			}
			b.ReportMetric(median(kmxT), "kmx-s")
			b.ReportMetric(median(floorT), "floor-s")
			b.ReportMetric(median(ratio), "kmx/floor")
			b.ReportMetric(float64(rss)/1024, "kmx-peak-MiB")
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
