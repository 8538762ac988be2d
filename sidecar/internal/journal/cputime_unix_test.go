//go:build unix

package journal_test

import (
	"syscall"
	"time"
)

// cpuTime is this process's user+system CPU time. The benchmark reports it
// per turn beside wall time because the build machine is shared: wall time
// there includes waiting for a core, CPU time does not.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
