//go:build unix

package testutil

import (
	"syscall"
	"testing"
)

// Umask0 runs the rest of the test under umask 0, so any private mode seen
// is one kmx asked for, not one the umask happened to narrow. The umask is
// process-wide: tests that call it must not run in parallel.
func Umask0(tb testing.TB) {
	tb.Helper()
	old := syscall.Umask(0)
	tb.Cleanup(func() { syscall.Umask(old) })
}
