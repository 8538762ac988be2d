package agentfile

import "strings"

// blockLinesRef is the byte-by-byte blockLines the fast one replaced; the
// tests hold the two to the same answers.
func blockLinesRef(text string, base int) []int {
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
