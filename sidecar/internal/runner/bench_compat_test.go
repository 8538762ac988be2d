package runner

import (
	"context"
	"fmt"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// BenchmarkTestCompatible measures Test through the runner on the
// compatible route: for every example one real HTTP round trip to a local
// endpoint on 127.0.0.1 that answers instantly, the five journal commits
// and replay verification. Run it for 1 and 2,000 examples; the marginal
// cost per example is (t2000 - t1) / 1999.
func BenchmarkTestCompatible(b *testing.B) {
	srv := newChatServer(b, false, echo)
	for _, n := range []int{1, 2000} {
		src := generatedAgent(n)
		b.Run(fmt.Sprintf("examples=%d", n), func(b *testing.B) {
			home := testutil.PrivateDir(b)
			opts := Options{Options: invocation.Options{StateDir: home, Model: "kmx-bench-model", Endpoint: srv.base()}}
			req := invocation.Request{Path: "generated.agent.md", Source: src}
			for b.Loop() {
				rep, err := Test(context.Background(), opts, req)
				if err != nil || rep.Verdict != VerdictPass || !rep.Journaled {
					b.Fatalf("verdict %v journaled %v err %v", rep.Verdict, rep.Journaled, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1e6, "ms/example")
		})
	}
}
