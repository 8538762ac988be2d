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
	var quote byte
	depth := 0
	atLineStart := true
	prev := byte('\n') // last byte that is not a space or tab
	for i := 0; i < len(text); i++ {
		c := text[i]
		if atLineStart {
			atLineStart = false
			if quote == 0 && depth == 0 {
				starts = append(starts, base+i)
			}
		}
		switch {
		case c == '\n':
			atLineStart = true
			if quote == 0 {
				prev = '\n'
			}
			continue
		case quote == '"':
			if c == '\\' {
				i++
			} else if c == '"' {
				quote = 0
			}
		case quote == '\'':
			if c == '\'' {
				if i+1 < len(text) && text[i+1] == '\'' {
					i++
				} else {
					quote = 0
				}
			}
		case c == '#' && (i == 0 || text[i-1] == ' ' || text[i-1] == '\t' || text[i-1] == '\n'):
			// A comment runs to the end of the line.
			if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
				i += j - 1
			} else {
				i = len(text)
			}
		case c == ' ' || c == '\t' || c == '\r':
			continue
		case (c == '"' || c == '\'') && valueStart(text, i, prev, depth):
			quote = c
		case (c == '[' || c == '{') && valueStart(text, i, prev, depth):
			depth++
		case (c == ']' || c == '}') && depth > 0:
			depth--
		}
		prev = c
	}
	return starts
}

// valueStart reports whether the byte at i begins a token rather than
// sitting inside a plain scalar such as "it's" or "x[1]".
func valueStart(text string, i int, prev byte, depth int) bool {
	if i == 0 || text[i-1] == ' ' || text[i-1] == '\t' || text[i-1] == '\n' {
		return true
	}
	return strings.IndexByte(":-?", prev) >= 0 || depth > 0 && strings.IndexByte("[{,", prev) >= 0
}
