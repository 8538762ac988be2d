//go:build windows

package journal

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// LockFileEx locks are tied to the handle and dropped by the system when the
// process ends, so a crashed run leaves an unlocked .lock file.

func lockFile(f *os.File) error {
	ol := new(windows.Overlapped)
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err != nil {
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
			return errLocked
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}

// releaseLock unlocks and closes before removing: Windows cannot delete a
// file another handle still holds without FILE_SHARE_DELETE.
func releaseLock(f *os.File) error {
	ol := new(windows.Overlapped)
	unlockErr := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol)
	closeErr := f.Close()
	rmErr := os.Remove(f.Name())
	if err := errors.Join(unlockErr, closeErr, rmErr); err != nil {
		return fmt.Errorf("release run lock: %w", err)
	}
	return nil
}

func unlockFile(f *os.File) error {
	ol := new(windows.Overlapped)
	if err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol); err != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), err)
	}
	return nil
}
