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
// receiving its publishDiagnostics: change application, the parse (with
// the document's own agentfile.Parser, as in production) and the JSON
// round trip. The change is in the instructions, so no example changes.
func BenchmarkDiagnostics1MiB(b *testing.B) {
	benchDiagnostics(b, nil, func(int) benchEdit { return benchEdit{line: 4, char: 0, pair: "Rr"} })
}

// BenchmarkDiagnostics1MiBEditExample is the same round trip when the
// keystroke lands in an example's input: a different example each time,
// so the Parser decodes and checks one example anew on every change.
func BenchmarkDiagnostics1MiBEditExample(b *testing.B) {
	benchDiagnostics(b, nil, func(n int) benchEdit {
		// bigAgent's examples start on line 9 and are 7 lines long; the
		// third line of each is its input, "    Draft release notes...".
		return benchEdit{line: 9 + 7*(n%4000) + 2, char: 4, pair: "Dd"}
	})
}

// BenchmarkDiagnostics1MiBServerShare is the same round trip with the parse
// replaced by a precomputed result: what the server itself adds (change
// application, scheduling, the version check, JSON both ways).
func BenchmarkDiagnostics1MiBServerShare(b *testing.B) {
	res := agentfile.Parse("big.agent.md", []byte(bigAgent(1<<20)))
	benchDiagnostics(b, func(string, []byte) agentfile.Result { return res }, func(int) benchEdit { return benchEdit{line: 4, char: 0, pair: "Rr"} })
}

// benchEdit is one keystroke: the character at line:char becomes the
// other letter of pair, so the text keeps its size.
type benchEdit struct {
	line, char int
	pair       string
}

func benchDiagnostics(b *testing.B, parse func(string, []byte) agentfile.Result, next func(n int) benchEdit) {
	text := bigAgent(1 << 20)
	c := startServer(b, lsp.Options{Parse: parse})
	c.initialize(nil)
	uri := "file:///bench/big.agent.md"
	c.open(uri, 1, text)
	if d, _ := c.diagnosticsFor(0, uri, 1); len(d.Diagnostics) != 0 {
		b.Fatalf("the generated file is not valid: %+v", d.Diagnostics[0])
	}
	version := int32(1)
	// toggled says which edited places hold the second letter now.
	toggled := map[[2]int]bool{}
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		version++
		from := c.count()
		e := next(n)
		at := [2]int{e.line, e.char}
		ch := e.pair[1:]
		if toggled[at] {
			ch = e.pair[:1]
		}
		toggled[at] = !toggled[at]
		c.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": version},
			"contentChanges": []any{map[string]any{"range": rng(e.line, e.char, e.line, e.char+1), "text": ch}},
		})
		if d, _ := c.diagnosticsFor(from, uri, version); len(d.Diagnostics) != 0 {
			b.Fatalf("version %d has diagnostics: %+v", version, d.Diagnostics[0])
		}
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
