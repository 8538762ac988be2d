package workspace

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxResultBytes bounds one tool result (the seed's 32 KiB, the same as
// localtools.MaxResultBytes).
const MaxResultBytes = 32 << 10

// maxLineBytes bounds one line quoted in a search result.
const maxLineBytes = 400

// bound cuts text to MaxResultBytes, at a line break when there is one,
// and says what was cut and how to see more.
func bound(text, hint string) string {
	if len(text) <= MaxResultBytes {
		return text
	}
	note := func(n int) string {
		return fmt.Sprintf("\n[kmx: result truncated at 32 KiB: %d more bytes not shown. %s]", n, hint)
	}
	keep := MaxResultBytes - len(note(len(text)))
	cut := text[:keep]
	if i := strings.LastIndexByte(cut, '\n'); i > keep/2 {
		cut = cut[:i]
	}
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + note(len(text)-len(cut))
}

// clip shortens one quoted line.
func clip(line string) string {
	if len(line) <= maxLineBytes {
		return line
	}
	cut := line[:maxLineBytes]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + "…"
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }
