//go:build !unix

package journal_test

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
