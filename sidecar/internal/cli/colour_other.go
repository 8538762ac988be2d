//go:build !windows

package cli

import "os"

// enableEscapes: every other terminal kmx ships for reads escape sequences.
func enableEscapes(*os.File) bool { return true }
