package cli

import (
	"io"
	"os"
)

// Colour: verdict words are coloured only when stdout is a terminal, and
// never when NO_COLOR is set to anything (https://no-color.org) or TERM
// is "dumb". A pipe, a file, CI logs and --json get plain text.

const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// isTerminal reports whether w is a terminal kmx may colour: a character
// device (on Windows, a console that accepts escape sequences).
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && enableEscapes(f)
}

// colourOn reports whether env's stdout gets colour.
func colourOn(env Env) bool {
	if env.Getenv != nil && (env.Getenv("NO_COLOR") != "" || env.Getenv("TERM") == "dumb") {
		return false
	}
	return isTerminal(env.Stdout)
}

// paintVerdict colours an already padded verdict word by its verdict word
// (PASS green, FAIL and REFUSED red, UNKNOWN and flaky yellow) when on.
func paintVerdict(on bool, padded, word string) string {
	if !on {
		return padded
	}
	switch word {
	case "PASS", "pass":
		return ansiGreen + padded + ansiReset
	case "FAIL", "fail", "REFUSED", "refused":
		return ansiRed + padded + ansiReset
	case "ANSWERED", "answered", "skipped":
		return padded
	}
	return ansiYellow + padded + ansiReset
}
