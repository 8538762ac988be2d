//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package journal

import (
	"fmt"
	"os"
	"runtime"
)

// Without an OS lock, retention could delete a running run's journal, so no
// run starts at all.

func lockFile(f *os.File) error {
	return fmt.Errorf("lock %s: run locks are not supported on %s", f.Name(), runtime.GOOS)
}

func releaseLock(f *os.File) error {
	return fmt.Errorf("release run lock: not supported on %s", runtime.GOOS)
}

func unlockFile(f *os.File) error {
	return fmt.Errorf("unlock %s: not supported on %s", f.Name(), runtime.GOOS)
}
