package runner

import (
	"context"
	"fmt"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// generatedAgent returns an agent file with n examples, each with three
// text assertions, on the fake model.
func generatedAgent(n int) []byte {
	var b strings.Builder
	b.WriteString("---\nname: generated\nmodel: fake\n---\nYou answer briefly.\n\nReply with exactly `Answer:` followed by the input\n\n## Examples\n\n```yaml\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "- id: ex-%05d\n  input: Question number %d about the release\n  assert:\n    - contains: \"Answer:\"\n    - regex: \"number %d\\\\b\"\n    - notContains: TODO\n", i, i, i)
	}
	b.WriteString("```\n")
	return []byte(b.String())
}

// BenchmarkTestExamples measures kmx test through the runner on the fake
// model, journal commits and replay verification included, for 1, 200 and
// 2,000 examples at concurrency 1 and the default; the marginal cost per
// example is (tN - t1) / (N - 1).
func BenchmarkTestExamples(b *testing.B) {
	for _, bc := range []struct{ n, c int }{{1, 1}, {200, 1}, {2000, 1}, {200, invocation.DefaultConcurrency}, {2000, invocation.DefaultConcurrency}} {
		n := bc.n
		src := generatedAgent(n)
		b.Run(fmt.Sprintf("examples=%d/concurrency=%d", n, bc.c), func(b *testing.B) {
			home := filepath.Join(b.TempDir(), "kmx")
			if err := os.Mkdir(home, 0o700); err != nil {
				b.Fatal(err)
			}
			req := invocation.Request{Path: "generated.agent.md", Source: src}
			var journalBytes int64
			for i := 0; i < b.N; i++ {
				rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Concurrency: bc.c}}, req)
				if err != nil || rep.Verdict != VerdictPass {
					b.Fatalf("verdict %v err %v", rep.Verdict, err)
				}
				fi, err := os.Stat(rep.JournalPath)
				if err != nil {
					b.Fatal(err)
				}
				journalBytes = fi.Size()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1e6, "ms/example")
			b.ReportMetric(float64(journalBytes)/float64(n), "journal-B/example")
		})
	}
}
