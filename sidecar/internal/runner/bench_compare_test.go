package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
)

// BenchmarkCompareTwoFakeModels measures a comparison of two columns on
// the fake model (kmx test --model A --model B, here both fake: the same
// work each) against the same two single-model runs one after the other,
// paired: each iteration times both, in alternating order, on the same
// 200 examples and concurrency, so load on the machine falls on both
// alike. The target (docs/benchmarks.md) is compare/sequential <= 1.1.
func BenchmarkCompareTwoFakeModels(b *testing.B) {
	const n = 200
	src := generatedAgent(n)
	home := filepath.Join(b.TempDir(), "kmx")
	if err := os.Mkdir(home, 0o700); err != nil {
		b.Fatal(err)
	}
	opts := Options{Options: invocation.Options{StateDir: home, Concurrency: invocation.DefaultConcurrency}}
	req := invocation.Request{Path: "generated.agent.md", Source: src}
	sequential := func() time.Duration {
		start := time.Now()
		for range 2 {
			rep, err := Test(context.Background(), opts, req)
			if err != nil || rep.Verdict != VerdictPass {
				b.Fatalf("single run: %v %v", rep.Verdict, err)
			}
		}
		return time.Since(start)
	}
	compared := func() time.Duration {
		start := time.Now()
		res, _, err := Compare(context.Background(), opts, req, Comparison{Models: []string{"fake", "fake"}})
		if err != nil || res.Verdict != VerdictPass || len(res.Columns) != 2 {
			b.Fatalf("comparison: %v", err)
		}
		return time.Since(start)
	}
	var seq, cmp time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			seq += sequential()
			cmp += compared()
		} else {
			cmp += compared()
			seq += sequential()
		}
	}
	b.ReportMetric(float64(cmp.Milliseconds())/float64(b.N), "compare-ms/op")
	b.ReportMetric(float64(seq.Milliseconds())/float64(b.N), "sequential-ms/op")
	b.ReportMetric(float64(cmp)/float64(seq), "compare/sequential")
}

// BenchmarkCompareSlowEndpoint: on an endpoint that takes 200 ms per
// request, two models compared at --concurrency 8 against one model's run
// at --concurrency 4, paired as above, 16 examples each. The shared pool
// keeps 8 requests in flight across both models, so the target
// (docs/benchmarks.md) is compare/single <= 1.2.
func BenchmarkCompareSlowEndpoint(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		time.Sleep(200 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(okBody(req.Model, "Answer: "+req.Messages[len(req.Messages)-1].Content)))
	}))
	defer srv.Close()
	var sb strings.Builder
	sb.WriteString("---\nname: slow\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n")
	for i := range 16 {
		fmt.Fprintf(&sb, "- id: ex-%02d\n  input: question %d\n  assert:\n    - contains: \"Answer:\"\n", i, i)
	}
	sb.WriteString("```\n")
	home := filepath.Join(b.TempDir(), "kmx")
	if err := os.Mkdir(home, 0o700); err != nil {
		b.Fatal(err)
	}
	req := invocation.Request{Path: "slow.agent.md", Source: []byte(sb.String())}
	single := func() time.Duration {
		start := time.Now()
		rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Endpoint: srv.URL + "/v1", Model: "m1", Concurrency: 4}}, req)
		if err != nil || rep.Verdict != VerdictPass {
			b.Fatalf("single run: %v %v", rep.Verdict, err)
		}
		return time.Since(start)
	}
	compared := func() time.Duration {
		start := time.Now()
		res, _, err := Compare(context.Background(), Options{Options: invocation.Options{StateDir: home, Endpoint: srv.URL + "/v1", Concurrency: 8}}, req, Comparison{Models: []string{"m1", "m2"}})
		if err != nil || res.Verdict != VerdictPass {
			b.Fatalf("comparison: %v", err)
		}
		return time.Since(start)
	}
	var one, two time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			one += single()
			two += compared()
		} else {
			two += compared()
			one += single()
		}
	}
	b.ReportMetric(float64(two.Milliseconds())/float64(b.N), "compare-ms/op")
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "single-ms/op")
	b.ReportMetric(float64(two)/float64(one), "compare/single")
}
