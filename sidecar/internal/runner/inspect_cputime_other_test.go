//go:build !unix

package runner

import "time"

// inspectCPU is not measured here; the benchmark reports wall time only.
func inspectCPU() (time.Duration, bool) { return 0, false }
