package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
)

// scriptedAgent returns an agent file with n examples on the fake model,
// each of turns turns (turns 1: a one-turn example with input:), each turn
// with the same three text assertions.
func scriptedAgent(n, turns int) []byte {
	var b strings.Builder
	b.WriteString("---\nname: scripted\nmodel: fake\n---\nReply with the turn number\n\n## Examples\n\n```yaml\n")
	for i := 0; i < n; i++ {
		if turns == 1 {
			fmt.Fprintf(&b, "- id: ex-%05d\n  input: Question %d\n  assert: [contains: 'Turn 1:', regex: 'Question %d$', notContains: TODO]\n", i, i, i)
			continue
		}
		fmt.Fprintf(&b, "- id: ex-%05d\n  turns:\n", i)
		for k := 1; k <= turns; k++ {
			fmt.Fprintf(&b, "    - input: Question %d.%d\n      assert: [contains: 'Turn %d:', regex: 'Question %d.%d$', notContains: TODO]\n", i, k, k, i, k)
		}
	}
	b.WriteString("```\n")
	return []byte(b.String())
}

// BenchmarkMultiTurnPaired measures a 3-turn example against a one-turn
// example on the fake model, paired: each iteration runs kmx test on 50
// one-turn examples, then on 50 three-turn examples (same assertions per
// turn), at concurrency 1, each timed on its own, so both see the same
// machine at the same moment. Reported: ms per example of each and their
// ratio (target: at most 3.3, docs/benchmarks.md).
func BenchmarkMultiTurnPaired(b *testing.B) {
	const n = 50
	one := invocation.Request{Path: "one.agent.md", Source: scriptedAgent(n, 1)}
	three := invocation.Request{Path: "three.agent.md", Source: scriptedAgent(n, 3)}
	home := filepath.Join(b.TempDir(), "kmx")
	if err := os.Mkdir(home, 0o700); err != nil {
		b.Fatal(err)
	}
	run := func(req invocation.Request) time.Duration {
		start := time.Now()
		rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Concurrency: 1}}, req)
		if err != nil || rep.Verdict != VerdictPass {
			b.Fatalf("verdict %v err %v", rep.Verdict, err)
		}
		return time.Since(start)
	}
	var t1, t3 time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t1 += run(one)
		t3 += run(three)
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) / n / 1e6 }
	b.ReportMetric(per(t1), "ms/1-turn-example")
	b.ReportMetric(per(t3), "ms/3-turn-example")
	b.ReportMetric(float64(t3)/float64(t1), "x")
}
