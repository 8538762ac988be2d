package lsp_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

// bigAgent generates a valid agent file of at least size bytes: many
// examples with a few assertions each.
func bigAgent(size int) string {
	var b strings.Builder
	b.WriteString("---\nname: big\nmodel: fake\n---\nReply with exactly `Release notes:` followed by the input\n\n## Examples\n\n```yaml\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "- id: example-%d\n  input: |\n    Draft release notes for week %d, covering every merged pull request, grouped by area: résumé ✓.\n  assert:\n    - contains: \"Release notes:\"\n    - notContains: TODO\n    - regex: \"^Release notes: [A-Za-z]+\"\n", i, i)
	}
	b.WriteString("```\n")
	return b.String()
}

// BenchmarkDiagnostics1MiB measures, in-process over net.Pipe, the time from
// sending a one-character incremental didChange of a 1 MiB agent file to
// receiving its publishDiagnostics: change application, the parse and the
// JSON round trip.
func BenchmarkDiagnostics1MiB(b *testing.B) {
	benchDiagnostics(b, nil)
}

// BenchmarkDiagnostics1MiBServerShare is the same round trip with the parse
// replaced by a precomputed result: what the server itself adds (change
// application, scheduling, the version check, JSON both ways).
func BenchmarkDiagnostics1MiBServerShare(b *testing.B) {
	res := agentfile.Parse("big.agent.md", []byte(bigAgent(1<<20)))
	benchDiagnostics(b, func(string, []byte) agentfile.Result { return res })
}

func benchDiagnostics(b *testing.B, parse func(string, []byte) agentfile.Result) {
	text := bigAgent(1 << 20)
	c := startServer(b, lsp.Options{Parse: parse})
	c.initialize(nil)
	uri := "file:///bench/big.agent.md"
	c.open(uri, 1, text)
	if d, _ := c.diagnosticsFor(0, uri, 1); len(d.Diagnostics) != 0 {
		b.Fatalf("the generated file is not valid: %+v", d.Diagnostics[0])
	}
	version := int32(1)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		version++
		from := c.count()
		// Toggle one character of the instructions: same size every time.
		ch := "R"
		if version%2 == 0 {
			ch = "r"
		}
		c.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": version},
			"contentChanges": []any{map[string]any{"range": rng(4, 0, 4, 1), "text": ch}},
		})
		c.diagnosticsFor(from, uri, version)
	}
}

// BenchmarkInitializeAfterStart measures the real binary: process start to
// the initialize result.
func BenchmarkInitializeAfterStart(b *testing.B) {
	bin := buildKMX(b, b.TempDir())
	home := privateHome(b)
	for b.Loop() {
		start := time.Now()
		p := startProcess(b, bin, home)
		var res map[string]any
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		_, err := p.conn.Call(ctx, "initialize", map[string]any{"capabilities": map[string]any{}}, &res)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms-to-initialize")
		p.kill()
	}
}

// BenchmarkIdleRSS reports the resident set of `kmx lsp` after initialize
// and one open document, once idle (Linux: /proc/PID/status VmRSS).
func BenchmarkIdleRSS(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/PID/status")
	}
	bin := buildKMX(b, b.TempDir())
	home := privateHome(b)
	for b.Loop() {
		p := startProcess(b, bin, home)
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		_, err := p.conn.Call(ctx, "initialize", map[string]any{"capabilities": map[string]any{}}, nil)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		_ = p.conn.Notify(context.Background(), "textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": "file:///x/a.agent.md", "languageId": "markdown", "version": 1, "text": unfinished}})
		time.Sleep(300 * time.Millisecond)
		kb, err := vmRSS(p.cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(kb)/1024, "MiB-RSS")
		p.kill()
	}
}

func vmRSS(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
