package secrets

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ContainsValue reports whether the exact credential value secret appears
// in text, at any length. Besides the text as given it checks the text with
// JSON string escapes resolved (so "\u0067hp_..." or "a\/b" cannot hide the
// value) and two terminal display views of each: with control and format
// characters and ANSI escape sequences removed, and with each run of them
// compacted to one space. An empty secret is never contained.
//
// It finds the exact value only, not encoded (base64, URL) or partial
// copies; callers must not present it as general data-loss prevention.
func ContainsValue(text, secret string) bool {
	if secret == "" {
		return false
	}
	if strings.Contains(text, secret) {
		return true
	}
	views := []string{text}
	if strings.IndexByte(text, '\\') >= 0 {
		views = append(views, jsonUnescape(text))
	}
	for _, v := range views {
		if v != text && strings.Contains(v, secret) {
			return true
		}
		// Text a terminal shows as it is has display views equal to it,
		// already searched: most model replies and requests, checked
		// without building either view.
		if shownAsIs(v) {
			continue
		}
		if strings.Contains(displayView(v, ""), secret) || strings.Contains(displayView(v, " "), secret) {
			return true
		}
	}
	return false
}

// shownAsIs reports whether displayView leaves text unchanged whatever the
// separator: it holds no control or format character (and so no ANSI
// escape sequence, which starts with one).
func shownAsIs(text string) bool {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
		i += n
	}
	return true
}

// printableASCII reports whether c is a byte a terminal shows as itself.
func printableASCII(c byte) bool { return c >= 0x20 && c < 0x7f }

// JSON's one-letter escapes: the letter after a backslash, and the byte at
// the same position in jsonEscaped that it stands for.
const (
	jsonEscapeLetters = "\"\\/bfnrt"
	jsonEscaped       = "\"\\/\b\f\n\r\t"
)

// jsonUnescape resolves JSON string escapes wherever they appear, leaving
// anything that is not a valid escape as it is. It works on fragments
// (text need not be one JSON document) because answers and envelopes embed
// JSON strings in arbitrary surrounding text.
func jsonUnescape(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		c := text[i]
		if c != '\\' || i+1 >= len(text) {
			b.WriteByte(c)
			i++
			continue
		}
		switch e := text[i+1]; e {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			b.WriteByte(jsonEscaped[strings.IndexByte(jsonEscapeLetters, e)])
			i += 2
		case 'u':
			r, n := unicodeEscape(text[i:])
			if n == 0 {
				b.WriteByte(c)
				i++
				continue
			}
			b.WriteRune(r)
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// unicodeEscape decodes "\uXXXX", joining a UTF-16 surrogate pair when one
// follows. It returns the rune and the bytes consumed, 0 when s does not
// start with a valid escape.
func unicodeEscape(s string) (rune, int) {
	hex4 := func(s string) (rune, bool) {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(s[2:6], 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	if r >= 0xD800 && r < 0xDC00 {
		if lo, ok := hex4(s[6:]); ok && lo >= 0xDC00 && lo < 0xE000 {
			return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, 12
		}
	}
	return r, 6
}

// displayView is what a terminal shows of text: ANSI escape sequences and
// control or format characters (including zero-width and bidi marks) are
// replaced by sep, with a run of them yielding one sep.
func displayView(text, sep string) string {
	var b strings.Builder
	b.Grow(len(text))
	inRun := false
	for i := 0; i < len(text); {
		if printableASCII(text[i]) {
			// A run of printable ASCII is shown as it is: copied whole,
			// without decoding or classifying each rune.
			start := i
			for i < len(text) && printableASCII(text[i]) {
				i++
			}
			b.WriteString(text[start:i])
			inRun = false
			continue
		}
		if n := ansiSequence(text[i:]); n > 0 {
			if !inRun {
				b.WriteString(sep)
				inRun = true
			}
			i += n
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			if !inRun {
				b.WriteString(sep)
				inRun = true
			}
			i += n
			continue
		}
		inRun = false
		b.WriteString(text[i : i+n])
		i += n
	}
	return b.String()
}

// ansiSequence returns the length of the CSI or OSC sequence at the start
// of s, 0 when there is none.
func ansiSequence(s string) int {
	if len(s) < 2 || s[0] != 0x1b {
		return 0
	}
	switch s[1] {
	case '[':
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
		return len(s)
	case ']':
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	return 0
}
