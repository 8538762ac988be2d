package agentfile

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// source indexes the text's line starts once, so that byte offsets, yaml.v3
// line/column pairs and LSP positions convert without rescanning the file.
type source struct {
	text       string
	lineStarts []int
}

func newSource(text string) *source {
	starts := make([]int, 1, 1+strings.Count(text, "\n"))
	for off := 0; ; {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
		starts = append(starts, off)
	}
	return &source{text: text, lineStarts: starts}
}

// lineOf returns the zero-based line holding offset.
func (s *source) lineOf(offset int) int {
	return sort.Search(len(s.lineStarts), func(i int) bool { return s.lineStarts[i] > offset }) - 1
}

// lineEnd returns the offset of the end of line (before '\n' and a '\r'
// before it).
func (s *source) lineEnd(line int) int {
	end := len(s.text)
	if line+1 < len(s.lineStarts) {
		end = s.lineStarts[line+1] - 1
	}
	if end > s.lineStarts[line] && s.text[end-1] == '\r' {
		end--
	}
	return end
}

// pos converts a byte offset to a Position with a UTF-16 character column.
func (s *source) pos(offset int) Position {
	offset = max(0, min(offset, len(s.text)))
	line := s.lineOf(offset)
	start := s.lineStarts[line]
	char := 0
	for i := start; i < offset; {
		r, n := utf8.DecodeRuneInString(s.text[i:])
		if r >= 0x10000 && r != utf8.RuneError {
			char += 2
		} else {
			char++
		}
		i += n
	}
	return Position{Offset: offset, Line: line, Character: char}
}

func (s *source) rng(start, end int) Range {
	if end < start {
		end = start
	}
	return Range{Start: s.pos(start), End: s.pos(end)}
}

// lineRange is the range of a whole line without its line break.
func (s *source) lineRange(line int) Range {
	return s.rng(s.lineStarts[line], s.lineEnd(line))
}

// yamlOffset converts yaml.v3's 1-based line and rune column inside a
// fragment that starts at the beginning of line baseLine into a byte offset.
func (s *source) yamlOffset(baseLine, line, column int) int {
	l := baseLine + line - 1
	if l < 0 {
		return 0
	}
	if l >= len(s.lineStarts) {
		return len(s.text)
	}
	i, end := s.lineStarts[l], s.lineEnd(l)
	for c := 1; c < column && i < end; c++ {
		_, n := utf8.DecodeRuneInString(s.text[i:])
		i += n
	}
	return i
}
