package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: kmx writes to the terminal end
// (a real TTY), the test reads what it wrote from the other.
func openPTY(t *testing.T) (term, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// Issue 31 item 11: verdicts are coloured on a terminal only, and never
// with NO_COLOR set; a pipe or a file (CI logs, --json, transcripts) gets
// plain text.
func TestVerdictsAreColouredOnATerminalOnlyAndNOCOLORTurnsItOff(t *testing.T) {
	h := home(t)
	file := demoFile("support-triage.agent.md") // one example fails on purpose
	run := func(stdout io.Writer, noColor string) {
		t.Helper()
		var errb bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: &errb, Getenv: func(k string) string {
			switch k {
			case "KMX_HOME":
				return h
			case "NO_COLOR":
				return noColor
			}
			return ""
		}}
		if code := Main(t.Context(), []string{"test", file}, env); code != ExitFailure {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	}
	// onTerminal runs kmx with stdout on a terminal and returns what it
	// wrote there; closing the terminal end ends the reader's stream.
	onTerminal := func(noColor string) string {
		t.Helper()
		term, reader := openPTY(t)
		done := make(chan string)
		go func() {
			var b bytes.Buffer
			_, _ = io.Copy(&b, reader) // ends with EIO once term is closed
			done <- b.String()
		}()
		run(term, noColor)
		term.Close()
		return <-done
	}

	got := onTerminal("")
	if !strings.Contains(got, ansiGreen+"PASS    "+ansiReset) || !strings.Contains(got, ansiRed+"FAIL    "+ansiReset) || !strings.Contains(got, "verdict "+ansiRed+"fail"+ansiReset) {
		t.Errorf("on a terminal the verdicts are not coloured:\n%q", got)
	}
	if got := onTerminal("1"); strings.Contains(got, "\x1b[") || !strings.Contains(got, "FAIL") {
		t.Errorf("NO_COLOR=1 on a terminal still coloured:\n%q", got)
	}

	var piped bytes.Buffer
	run(&piped, "")
	if strings.Contains(piped.String(), "\x1b[") || !strings.Contains(piped.String(), "FAIL") {
		t.Errorf("output that is no terminal is coloured:\n%q", piped.String())
	}
}
