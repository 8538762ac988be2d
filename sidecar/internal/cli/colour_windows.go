//go:build windows

package cli

import (
	"os"

	"golang.org/x/sys/windows"
)

// enableEscapes turns on the console's escape-sequence processing; a
// console that refuses (older Windows) gets plain text.
func enableEscapes(f *os.File) bool {
	h := windows.Handle(f.Fd())
	var mode uint32
	if err := windows.GetConsoleMode(h, &mode); err != nil {
		return false
	}
	return windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING) == nil
}
