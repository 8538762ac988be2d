//go:build unix

package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func generatedFile(b *testing.B, n int) string {
	b.Helper()
	var s strings.Builder
	s.WriteString("---\nname: generated\nmodel: fake\n---\nReply with exactly `Answer:` followed by the input\n\n## Examples\n\n```yaml\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&s, "- id: ex-%05d\n  input: Question number %d\n  assert:\n    - contains: \"Answer:\"\n", i, i)
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

// BenchmarkBinaryPeakRSS reports the peak resident memory of kmx test on a
// 2,000-example file: results are streamed, not held.
func BenchmarkBinaryPeakRSS(b *testing.B) {
	bin := kmxBinary(b)
	file := generatedFile(b, 2000)
	home := benchHome(b)
	var peak int64
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "test", file)
		cmd.Env = append(os.Environ(), "KMX_HOME="+home)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > peak {
			peak = ru.Maxrss
		}
	}
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")
}
