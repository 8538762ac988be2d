package journal_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// The crash and lock tests re-execute this test binary as a helper process
// selected by an environment switch, so the lock is held and the kill lands
// in a real second process.
const helperEnv = "KMX_JOURNAL_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Getenv(helperEnv+"_DIR")))
	}
	os.Exit(m.Run())
}

// runHelper creates a journal in dir and prints "id RUNID". In "append" mode
// it then appends records forever, printing "seq N" after each one commits;
// in "hold" mode it appends one turn and waits for stdin to close. Either way
// it never calls Finish: it is killed.
func runHelper(mode, dir string) int {
	ctx := context.Background()
	j, err := journal.Create(ctx, dir, testMeta())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("id %s\n", j.ID())
	switch mode {
	case "append":
		// Bounded so an orphaned helper cannot run forever.
		for i := range 1_000_000 {
			seq, err := j.Append(ctx, journal.Record{SessionID: fmt.Sprintf("s%d", i/5), Turn: 1, Kind: journal.TurnKinds[i%5], Version: 1, Payload: []byte(`{"n":` + strconv.Itoa(i) + `}`)})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			if _, err := fmt.Printf("seq %d\n", seq); err != nil {
				return 2
			}
		}
	case "hold":
		if _, err := j.Append(ctx, journal.Record{SessionID: "s", Kind: journal.KindSessionPlaced, Version: 1, Payload: []byte("{}")}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	return 0
}

type helper struct {
	cmd   *exec.Cmd
	out   *bufio.Scanner
	stdin io.WriteCloser
	id    string
}

func startHelper(t *testing.T, mode, dir string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperEnv+"_DIR="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, out: bufio.NewScanner(stdout), stdin: stdin}
	t.Cleanup(func() { h.kill() })
	line := h.line(t)
	id, ok := strings.CutPrefix(line, "id ")
	if !ok {
		t.Fatalf("helper said %q, want its run ID", line)
	}
	h.id = id
	return h
}

func (h *helper) line(t *testing.T) string {
	t.Helper()
	if !h.out.Scan() {
		t.Fatalf("helper stopped early: %v", h.out.Err())
	}
	return h.out.Text()
}

// kill is SIGKILL on unix and TerminateProcess on windows: no deferred
// code, no Finish, no unlock by the helper itself.
func (h *helper) kill() {
	if h.cmd.ProcessState != nil {
		return
	}
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
}

func TestCrashKeepsEveryCommittedRecord(t *testing.T) {
	ctx := context.Background()
	dir := privateDir(t)
	h := startHelper(t, "append", dir)
	var last int64
	for last < 300 {
		seq, err := strconv.ParseInt(strings.TrimPrefix(h.line(t), "seq "), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		last = seq
	}
	h.kill()

	locked, err := journal.IsLocked(dir, h.id)
	if err != nil || locked {
		t.Fatalf("IsLocked after the crash = %v, %v; want false: the OS dropped the lock", locked, err)
	}
	if _, err := os.Stat(filepath.Join(dir, h.id+".lock")); err != nil {
		t.Fatalf("the crashed run's lock file is gone (%v); it should stay as the crash's trace", err)
	}
	j, err := journal.Open(ctx, dir, h.id)
	if err != nil {
		t.Fatalf("Open after crash: %v", err)
	}
	defer j.Close()
	if j.Status() != "" {
		t.Fatalf("a crashed run has status %q, want none", j.Status())
	}
	recs, err := j.Records(ctx, "")
	if err != nil {
		t.Fatalf("Records after crash: %v", err)
	}
	if int64(len(recs)) < last {
		t.Fatalf("after the crash %d records remain, but %d were reported committed", len(recs), last)
	}
	for i, r := range recs {
		if want := `{"n":` + strconv.Itoa(i) + `}`; string(r.Payload) != want {
			t.Fatalf("record %d payload %q, want %q", r.Seq, r.Payload, want)
		}
	}
	if err := j.Verify(ctx); err != nil {
		t.Fatalf("Verify (integrity_check and chain) after crash: %v", err)
	}
	t.Logf("killed after %d reported commits; %d records survived", last, len(recs))
}

func TestIsLockedAcrossProcesses(t *testing.T) {
	dir := privateDir(t)
	h := startHelper(t, "hold", dir)
	if got := h.line(t); got != "ready" {
		t.Fatalf("helper said %q", got)
	}
	locked, err := journal.IsLocked(dir, h.id)
	if err != nil || !locked {
		t.Fatalf("IsLocked while the other process runs = %v, %v; want true", locked, err)
	}
	// Checking must not steal or break the lock.
	if locked, _ := journal.IsLocked(dir, h.id); !locked {
		t.Fatal("a second IsLocked found the lock free")
	}
	// A run in this process is independent of the other's.
	j := create(t, dir)
	if locked, err := journal.IsLocked(dir, j.ID()); err != nil || !locked {
		t.Fatalf("IsLocked of this process's running journal (a second descriptor) = %v, %v; want true", locked, err)
	}
	h.kill()
	if locked, err := journal.IsLocked(dir, h.id); err != nil || locked {
		t.Fatalf("IsLocked after the process died = %v, %v; want false", locked, err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if locked, err := journal.IsLocked(dir, j.ID()); err != nil || locked {
		t.Fatalf("IsLocked after Close = %v, %v; want false", locked, err)
	}
	if _, err := journal.IsLocked(dir, "../"+h.id); err == nil {
		t.Fatal("IsLocked accepted a path-traversing run ID")
	}
	never := "20260101T000000.000000000Z-00000000"
	if locked, err := journal.IsLocked(dir, never); err != nil || locked {
		t.Fatalf("IsLocked of a run that never existed = %v, %v; want false, nil", locked, err)
	}
}
