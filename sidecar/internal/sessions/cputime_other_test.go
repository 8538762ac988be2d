//go:build !unix

package sessions

import "time"

// processCPU is not measured off unix; benchmarks then report wall time only.
func processCPU() (time.Duration, bool) { return 0, false }
