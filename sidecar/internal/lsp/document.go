package lsp

// document.go converts LSP positions and content changes into byte
// offsets and new text; the documents themselves live in the store.

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// lspPosition is an LSP position: zero-based line, and character in UTF-16
// code units (LSP's default position encoding, the only one we advertise).
type lspPosition struct {
	Line      uint32 `json:"line"`
	Character uint32 `json:"character"`
}

type lspRange struct {
	Start lspPosition `json:"start"`
	End   lspPosition `json:"end"`
}

// contentChange is one TextDocumentContentChangeEvent. Range is a pointer
// because its absence means "the whole document" (full sync), which
// protocol.TextDocumentContentChangeEvent cannot express.
type contentChange struct {
	Range *lspRange `json:"range,omitempty"`
	Text  string    `json:"text"`
}

// applyChanges applies changes in order, as the specification says: each
// range refers to the text after the previous change.
func applyChanges(text []byte, changes []contentChange) ([]byte, error) {
	for i, c := range changes {
		if c.Range == nil {
			text = []byte(c.Text)
			continue
		}
		start, err := byteOffset(text, c.Range.Start)
		if err != nil {
			return nil, fmt.Errorf("change %d: start: %w", i+1, err)
		}
		end, err := byteOffset(text, c.Range.End)
		if err != nil {
			return nil, fmt.Errorf("change %d: end: %w", i+1, err)
		}
		if end < start {
			return nil, fmt.Errorf("change %d: the range ends before it starts", i+1)
		}
		out := make([]byte, 0, len(text)-(end-start)+len(c.Text))
		out = append(out, text[:start]...)
		out = append(out, c.Text...)
		out = append(out, text[end:]...)
		text = out
	}
	return text, nil
}

// byteOffset converts an LSP position into a byte offset in text.
//
// Lines end at "\n", "\r\n" or "\r" (LSP's three line terminators). A
// character past the end of its line means the end of the line, as the
// specification asks; a line past the last one is an error, because the
// client and server texts then disagree. A position inside a surrogate pair
// is rounded up to the end of that character rather than splitting it.
func byteOffset(text []byte, pos lspPosition) (int, error) {
	off := 0
	for line := uint32(0); line < pos.Line; line++ {
		next := lineEnd(text, off)
		if next >= len(text) {
			return 0, fmt.Errorf("line %d is past the end of the document (%d lines); resend the full text", pos.Line+1, line+1)
		}
		// Skip the terminator.
		if text[next] == '\r' && next+1 < len(text) && text[next+1] == '\n' {
			next += 2
		} else {
			next++
		}
		off = next
	}
	end := lineEnd(text, off)
	units := uint32(0)
	for off < end && units < pos.Character {
		r, size := utf8.DecodeRune(text[off:end])
		n := uint32(1)
		if r >= 0x10000 && r != utf8.RuneError {
			n = uint32(utf16.RuneLen(r))
		}
		units += n
		off += size
	}
	return off, nil
}

// lineEnd returns the offset of the terminator of the line starting at off,
// or len(text) for the last line.
func lineEnd(text []byte, off int) int {
	for i := off; i < len(text); i++ {
		if text[i] == '\n' || text[i] == '\r' {
			return i
		}
	}
	return len(text)
}
