//go:build unix

package sessions

import (
	"syscall"
	"time"
)

// processCPU is the user+system CPU time this process has used. Benchmarks
// report it beside wall time because the machine they run on is shared:
// wall time there measures the neighbours as much as the code.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
