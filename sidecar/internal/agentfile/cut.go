package agentfile

import "strings"

// blockLines lists the lines of a YAML text that begin outside any quoted
// scalar or flow collection: only such a line can start a new top-level
// entry. libyaml lets a quoted scalar or a flow collection continue at
// column 0 ("a: [1,\n2]"), so a line's first column alone cannot say where
// an entry starts. The tracking is deliberately conservative: a quote or
// bracket that might open a scalar or collection is taken to open one, so
// an ambiguous line is treated as a continuation, which can only defer a
// check, never invent an error.
func blockLines(text string, base int) []int {
	var starts []int
	if text != "" {
		starts = append(starts, base)
	}
	var quote byte
	depth := 0
	for i := 0; i < len(text); {
		// Inside a quoted scalar no line can start an entry, so only the
		// bytes that end the scalar matter.
		switch quote {
		case '"':
			j := strings.IndexAny(text[i:], "\\\"")
			if j < 0 {
				return starts
			}
			i += j
			if text[i] == '\\' {
				i += 2 // an escape: the next byte cannot end the scalar
			} else {
				quote, i = 0, i+1
			}
			continue
		case '\'':
			j := strings.IndexByte(text[i:], '\'')
			if j < 0 {
				return starts
			}
			i += j
			if i+1 < len(text) && text[i+1] == '\'' {
				i += 2 // '' is an escaped quote
			} else {
				quote, i = 0, i+1
			}
			continue
		}
		for i < len(text) && !blockSpecial[text[i]] {
			i++
		}
		if i == len(text) {
			break
		}
		switch c := text[i]; c {
		case '\n':
			if depth == 0 && i+1 < len(text) {
				starts = append(starts, base+i+1)
			}
		case '#':
			if i == 0 || text[i-1] == ' ' || text[i-1] == '\t' || text[i-1] == '\n' {
				// A comment runs to the end of the line.
				j := strings.IndexByte(text[i:], '\n')
				if j < 0 {
					return starts
				}
				i += j
				continue
			}
		case '"', '\'':
			if valueStart(text, i, prevByte(text, i), depth) {
				quote = c
			}
		case '[', '{':
			if valueStart(text, i, prevByte(text, i), depth) {
				depth++
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
		i++
	}
	return starts
}

// blockSpecial marks the bytes blockLines acts on outside quoted scalars;
// it skips every other byte without looking further.
var blockSpecial = [256]bool{'\n': true, '#': true, '"': true, '\'': true, '[': true, '{': true, ']': true, '}': true}

// prevByte returns the last byte before i that is not a space, tab or
// '\r', or '\n' at the start of the text. blockLines calls it outside
// quoted scalars only, where that byte is never inside a scalar (the
// scalar's closing quote comes after anything in it) nor in a comment (a
// comment runs to the end of its line), so it equals the last significant
// byte a byte-by-byte scan would have tracked.
func prevByte(text string, i int) byte {
	for k := i - 1; k >= 0; k-- {
		if b := text[k]; b != ' ' && b != '\t' && b != '\r' {
			return b
		}
	}
	return '\n'
}

// valueStart reports whether the byte at i begins a token rather than
// sitting inside a plain scalar such as "it's" or "x[1]".
func valueStart(text string, i int, prev byte, depth int) bool {
	if i == 0 || text[i-1] == ' ' || text[i-1] == '\t' || text[i-1] == '\n' {
		return true
	}
	return strings.IndexByte(":-?", prev) >= 0 || depth > 0 && strings.IndexByte("[{,", prev) >= 0
}
