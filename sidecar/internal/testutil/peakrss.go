package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// PeakRSS measures a program's peak resident memory. A process that starts
// a child with os/exec has its own peak RSS counted into the child's max
// RSS by Linux (os/exec starts children with vfork), so a benchmark that
// reads kmx's max RSS directly reads its own wherever that is larger.
// PeakRSS starts the program through testdata/peakrss, a small fresh
// process, instead.
type PeakRSS struct {
	runner string
	dir    string
}

// NewPeakRSS builds the runner into a temporary folder of tb.
func NewPeakRSS(tb testing.TB) *PeakRSS {
	tb.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("peak RSS: cannot locate the testutil package")
	}
	dir := tb.TempDir()
	runner := filepath.Join(dir, "peakrss")
	build := exec.Command("go", "build", "-o", runner, ".")
	build.Dir = filepath.Join(filepath.Dir(self), "testdata", "peakrss")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build the peak RSS runner: %v\n%s", err, out)
	}
	return &PeakRSS{runner: runner, dir: dir}
}

// Run runs cmd (not yet started) through the runner and returns its
// combined output and the program's peak RSS in KiB.
func (p *PeakRSS) Run(cmd *exec.Cmd) ([]byte, int64, error) {
	out := filepath.Join(p.dir, "maxrss")
	_ = os.Remove(out)
	cmd.Args = append([]string{p.runner, out, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = p.runner
	combined, err := cmd.CombinedOutput()
	if err != nil {
		return combined, 0, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return combined, 0, fmt.Errorf("peak RSS: %w", err)
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return combined, 0, fmt.Errorf("peak RSS: %w", err)
	}
	return combined, kib, nil
}
