//go:build unix

package runner

import (
	"syscall"
	"time"
)

// inspectCPU is the user+system CPU time this process has used, so the
// Inspect benchmark can report CPU beside wall time on a shared machine.
func inspectCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
