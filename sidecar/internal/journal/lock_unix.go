//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package journal

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// flock locks the open file description, so two descriptors in one process
// conflict just as two processes do, and the kernel drops the lock when the
// process dies: a crashed run leaves an unlocked .lock file.

func lockFile(f *os.File) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return errLocked
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}

// releaseLock removes the lock file while still holding its lock, so a
// process that opens the path afterwards finds nothing rather than an
// unlocked file that is about to disappear.
func releaseLock(f *os.File) error {
	rmErr := os.Remove(f.Name())
	unlockErr := unix.Flock(int(f.Fd()), unix.LOCK_UN)
	closeErr := f.Close()
	if err := errors.Join(rmErr, unlockErr, closeErr); err != nil {
		return fmt.Errorf("release run lock: %w", err)
	}
	return nil
}

func unlockFile(f *os.File) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), err)
	}
	return nil
}
