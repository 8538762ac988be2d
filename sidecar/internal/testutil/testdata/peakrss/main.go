// Command peakrss runs a program and writes the program's peak resident
// memory (getrusage's max RSS, KiB on Linux) to a file.
//
// A Go program that starts a child with os/exec does so with vfork
// (CLONE_VM), and Linux then counts the parent's own peak RSS into the
// child's max RSS: a benchmark process that starts kmx directly reads its
// own peak (tens of MiB) wherever it exceeds kmx's. peakrss is a fresh,
// small process that starts the program for it, so the figure is the
// program's, never lower than peakrss's own few MiB.
//
// It lives under testdata so it is never part of the kmx build.
//
//	peakrss OUT PROGRAM [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: peakrss OUT PROGRAM [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(127)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "peakrss: no resource usage on this system")
		os.Exit(127)
	}
	if err := os.WriteFile(os.Args[1], []byte(strconv.FormatInt(ru.Maxrss, 10)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(127)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
