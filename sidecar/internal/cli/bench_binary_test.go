//go:build unix

package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

func generatedFile(b *testing.B, n int) string {
	b.Helper()
	// The file scripts/bench-compare.sh generates: three text assertions
	// per example.
	var s strings.Builder
	s.WriteString("---\nname: generated\nmodel: fake\n---\nYou answer briefly.\n\nReply with exactly `Answer:` followed by the input\n\n## Examples\n\n```yaml\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&s, "- id: ex-%05d\n  input: Question number %d about the release\n  assert:\n    - contains: \"Answer:\"\n    - regex: \"number %d\\\\b\"\n    - notContains: TODO\n", i, i, i)
	}
	s.WriteString("```\n")
	p := filepath.Join(b.TempDir(), "generated.agent.md")
	if err := os.WriteFile(p, []byte(s.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

func benchHome(b *testing.B) string {
	b.Helper()
	h := filepath.Join(b.TempDir(), "kmx")
	if err := os.Mkdir(h, 0o700); err != nil {
		b.Fatal(err)
	}
	return h
}

// BenchmarkBinaryFirstResult measures the real kmx process from start to its
// first printed verdict line (kmx test on the fake model, journaled).
func BenchmarkBinaryFirstResult(b *testing.B) {
	bin := kmxBinary(b)
	file := generatedFile(b, 1)
	home := benchHome(b)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "test", file)
		cmd.Env = append(os.Environ(), "KMX_HOME="+home)
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "PASS") {
				total += time.Since(start)
				break
			}
		}
		for sc.Scan() {
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-first-result")
}

// BenchmarkBinaryPeakRSS reports the peak resident memory of the whole kmx
// test process (getrusage's max RSS, the largest of b.N runs, in MiB and
// MB, read through testutil.PeakRSS so that this test process's own memory
// is not counted in) on generated files of 200 and 2,000 examples with three text
// assertions each (as scripts/bench-compare.sh writes them), on the fake
// model, at concurrency 1, 4 and 8. Issue 16's target is 2,000 examples
// at concurrency 8: at most 40 MB.
func BenchmarkBinaryPeakRSS(b *testing.B) {
	bin := releaseBinary(b)
	rss := testutil.NewPeakRSS(b)
	for _, n := range []int{200, 2000} {
		file := generatedFile(b, n)
		for _, c := range []int{1, 4, 8} {
			b.Run(fmt.Sprintf("examples=%d/concurrency=%d", n, c), func(b *testing.B) {
				home := benchHome(b)
				var peak int64
				for i := 0; i < b.N; i++ {
					cmd := exec.Command(bin, "test", file, "--concurrency", strconv.Itoa(c))
					cmd.Env = append(os.Environ(), "KMX_HOME="+home)
					out, kib, err := rss.Run(cmd)
					if err != nil {
						b.Fatalf("%v\n%s", err, out)
					}
					peak = max(peak, kib)
				}
				b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
				b.ReportMetric(float64(peak)*1024/1e6, "peak-RSS-MB")
			})
		}
	}
}

var releaseOnce struct {
	sync.Once
	path string
	err  error
}

// releaseBinary builds kmx once per test process the way scripts/package.sh
// does (no cgo, no symbol tables), for figures about the shipped binary.
func releaseBinary(b *testing.B) string {
	b.Helper()
	releaseOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kmx-release-")
		if err != nil {
			releaseOnce.err = err
			return
		}
		releaseOnce.path = filepath.Join(dir, "kmx")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", releaseOnce.path, "github.com/kmxdev/kmx/sidecar/cmd/kmx")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			releaseOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if releaseOnce.err != nil {
		b.Fatalf("build kmx: %v", releaseOnce.err)
	}
	return releaseOnce.path
}
