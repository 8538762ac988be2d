//go:build unix

package state

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

func mkdirPrivate(p string) error { return os.Mkdir(p, 0o700) }

func createPrivate(p string) (*os.File, error) {
	// O_EXCL with O_CREATE also refuses a pre-placed symlink at p.
	return os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
}

func checkDir(p string, fi fs.FileInfo) error {
	if err := checkDirReadable(p, fi); err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o700 {
		return readOnly(p, fi.Mode())
	}
	return nil
}

// checkDirReadable accepts a directory only the owner can open and read:
// 0700, or 0500 made read-only. Group/other bits expose it; missing
// owner read or search bits would make kmx fail later in a less clear
// way, so both are refused here.
func checkDirReadable(p string, fi fs.FileInfo) error {
	if err := checkCommon(p, fi); err != nil {
		return err
	}
	if !fi.IsDir() {
		return unsafeKind(p, "is not a directory")
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 || perm&0o500 != 0o500 {
		return unsafeMode(p, fi.Mode(), "0700")
	}
	return nil
}

func checkFile(p string, fi fs.FileInfo) error {
	if err := checkFileReadable(p, fi); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o200 == 0 {
		return readOnly(p, fi.Mode())
	}
	return nil
}

// checkFileReadable accepts a regular file only the owner can open, with
// the owner's read bit: 0600, or 0400 made read-only.
func checkFileReadable(p string, fi fs.FileInfo) error {
	if err := checkCommon(p, fi); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return unsafeKind(p, "is not a regular file")
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 || perm&0o400 == 0 {
		return unsafeMode(p, fi.Mode(), "0600")
	}
	return nil
}

func checkCommon(p string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return unsafeKind(p, "is a symbolic link, which could redirect kmx's private state")
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("check state path %s: no owner information", p)
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return &UnsafeError{
			Path:    p,
			Problem: fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, uid),
			Fix:     "set KMX_HOME to a folder you own",
		}
	}
	return nil
}

func unsafeMode(p string, mode fs.FileMode, want string) *UnsafeError {
	return &UnsafeError{
		Path:    p,
		Problem: fmt.Sprintf("has mode %04o, and kmx needs %s (only you can open it)", mode.Perm(), want),
		Fix:     fmt.Sprintf("run chmod %s %s, or set KMX_HOME to a private folder", strings.TrimPrefix(want, "0"), p),
	}
}

// readOnly is a private path the user made read-only: kmx reads from it
// but cannot write there. It is the user's choice, so kmx says what a
// write needs rather than calling it unsafe.
func readOnly(p string, mode fs.FileMode) *UnsafeError {
	return &UnsafeError{
		Path:    p,
		Problem: fmt.Sprintf("is read-only (mode %04o): kmx reads runs and conversations there but cannot write", mode.Perm()),
		Fix:     fmt.Sprintf("make it and what kmx keeps in it writable with chmod -R u+w %s, or set KMX_HOME to a private folder you can write", p),
	}
}
