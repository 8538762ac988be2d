//go:build !unix && !windows

package state

import (
	"fmt"
	"io/fs"
	"os"
	"runtime"
)

// On platforms kmx does not support, nothing is created or accepted: a state
// folder whose privacy cannot be checked is not a state folder.

func mkdirPrivate(p string) error {
	return fmt.Errorf("kmx state is not supported on %s", runtime.GOOS)
}

func createPrivate(p string) (*os.File, error) {
	return nil, fmt.Errorf("kmx state is not supported on %s", runtime.GOOS)
}

func checkDir(p string, fi fs.FileInfo) error {
	return fmt.Errorf("kmx state is not supported on %s", runtime.GOOS)
}

func checkFile(p string, fi fs.FileInfo) error {
	return fmt.Errorf("kmx state is not supported on %s", runtime.GOOS)
}

func checkDirReadable(p string, fi fs.FileInfo) error { return checkDir(p, fi) }

func checkFileReadable(p string, fi fs.FileInfo) error { return checkFile(p, fi) }
