package journal

import (
	"unicode/utf8"
)

// decodeFast decodes the record payloads every turn reads back (chat turns
// and tool calls) without encoding/json's reflection, when data is in the
// exact form Encode writes: no whitespace, keys spelled as the struct tags,
// each once, strings of valid UTF-8 without surrogate escapes, integers
// without fraction or exponent, no null, no arrays. It reports false, with
// *v untouched, for anything else, and Decode then decodes with
// encoding/json as before; so a payload it accepts decodes to exactly what
// encoding/json (with DisallowUnknownFields) makes of it, and one it
// refuses is judged by encoding/json. FuzzDecodeMatchesEncodingJSON holds
// the two to that.
func decodeFast(data []byte, v any) bool {
	s := fastScanner{b: data}
	switch p := v.(type) {
	case *TurnStarted:
		t := *p
		var seen uint8
		if !s.object(func(k []byte) bool {
			switch string(k) {
			case "turn":
				return s.once(&seen, 0) && s.int(&t.Turn)
			case "instructions":
				return s.once(&seen, 1) && s.str(&t.Instructions)
			case "input":
				return s.once(&seen, 2) && s.str(&t.Input)
			case "model":
				return s.once(&seen, 3) && s.identity(&t.Model)
			}
			return false
		}) || !s.end() {
			return false
		}
		*p = t
	case *ModelRequest:
		t := *p
		var seen uint8
		if !s.object(func(k []byte) bool {
			switch string(k) {
			case "turn":
				return s.once(&seen, 0) && s.int(&t.Turn)
			case "model":
				return s.once(&seen, 1) && s.str(&t.Model)
			case "sha256":
				return s.once(&seen, 2) && s.str(&t.SHA256)
			case "bytes":
				return s.once(&seen, 3) && s.int(&t.Bytes)
			case "send":
				return s.once(&seen, 4) && s.int(&t.Send)
			}
			return false
		}) || !s.end() {
			return false
		}
		*p = t
	case *ModelCompletion:
		t := *p
		var seen uint8
		if !s.object(func(k []byte) bool {
			switch string(k) {
			case "turn":
				return s.once(&seen, 0) && s.int(&t.Turn)
			case "model":
				return s.once(&seen, 1) && s.str(&t.Model)
			case "text":
				return s.once(&seen, 2) && s.str(&t.Text)
			case "finishReason":
				return s.once(&seen, 3) && s.str(&t.FinishReason)
			case "send":
				return s.once(&seen, 4) && s.int(&t.Send)
			case "usage":
				t.Usage = &Usage{}
				return s.once(&seen, 5) && s.usage(t.Usage)
			}
			return false // toolCalls (an array) is left to encoding/json
		}) || !s.end() {
			return false
		}
		*p = t
	case *TurnTerminal:
		t := *p
		var seen uint8
		if !s.object(func(k []byte) bool {
			switch string(k) {
			case "turn":
				return s.once(&seen, 0) && s.int(&t.Turn)
			case "state":
				return s.once(&seen, 1) && s.str(&t.State)
			case "answer":
				return s.once(&seen, 2) && s.str(&t.Answer)
			case "error":
				return s.once(&seen, 3) && s.str(&t.Error)
			case "durationUs":
				return s.once(&seen, 4) && s.int(&t.DurationUs)
			}
			return false
		}) || !s.end() {
			return false
		}
		*p = t
	case *SessionPlaced:
		t := *p
		var seen uint8
		if !s.object(func(k []byte) bool {
			switch string(k) {
			case "sessionId":
				return s.once(&seen, 0) && s.str(&t.SessionID)
			case "harness":
				return s.once(&seen, 1) && s.str(&t.Harness)
			case "purpose":
				return s.once(&seen, 2) && s.str(&t.Purpose)
			case "exampleId":
				return s.once(&seen, 3) && s.str(&t.ExampleID)
			case "model":
				return s.once(&seen, 4) && s.identity(&t.Model)
			}
			return false // tools (an array) is left to encoding/json
		}) || !s.end() {
			return false
		}
		*p = t
	case *ToolCall:
		t := *p
		var seen uint8
		if !s.object(func(k []byte) bool {
			switch string(k) {
			case "turn":
				return s.once(&seen, 0) && s.int(&t.Turn)
			case "index":
				return s.once(&seen, 1) && s.int(&t.Index)
			case "id":
				return s.once(&seen, 2) && s.str(&t.ID)
			case "name":
				return s.once(&seen, 3) && s.str(&t.Name)
			case "arguments":
				return s.once(&seen, 4) && s.str(&t.Arguments)
			}
			return false
		}) || !s.end() {
			return false
		}
		*p = t
	case *ToolResult:
		t := *p
		var seen uint8
		if !s.object(func(k []byte) bool {
			switch string(k) {
			case "turn":
				return s.once(&seen, 0) && s.int(&t.Turn)
			case "index":
				return s.once(&seen, 1) && s.int(&t.Index)
			case "id":
				return s.once(&seen, 2) && s.str(&t.ID)
			case "name":
				return s.once(&seen, 3) && s.str(&t.Name)
			case "source":
				return s.once(&seen, 4) && s.str(&t.Source)
			case "dispatched":
				return s.once(&seen, 5) && s.bool(&t.Dispatched)
			case "result":
				return s.once(&seen, 6) && s.str(&t.Result)
			}
			return false
		}) || !s.end() {
			return false
		}
		*p = t
	default:
		return false
	}
	return true
}

// fastScanner reads the canonical JSON subset decodeFast accepts. Every
// method reports false for anything outside it.
type fastScanner struct {
	b []byte
	i int
}

func (s *fastScanner) next(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether the whole input was read.
func (s *fastScanner) end() bool { return s.i == len(s.b) }

// once marks field bit as seen; a repeated key is left to encoding/json.
func (s *fastScanner) once(seen *uint8, bit uint) bool {
	if *seen&(1<<bit) != 0 {
		return false
	}
	*seen |= 1 << bit
	return true
}

// object reads {"key":value,...}, calling field with each key (plain ASCII
// letters only) to read its value.
func (s *fastScanner) object(field func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		if !s.next('"') {
			return false
		}
		start := s.i
		for s.i < len(s.b) && (s.b[s.i] >= 'a' && s.b[s.i] <= 'z' || s.b[s.i] >= 'A' && s.b[s.i] <= 'Z' || s.b[s.i] >= '0' && s.b[s.i] <= '9') {
			s.i++
		}
		key := s.b[start:s.i]
		if !s.next('"') || !s.next(':') || !field(key) {
			return false
		}
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

func (s *fastScanner) identity(m *ModelIdentity) bool {
	var seen uint8
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "route":
			return s.once(&seen, 0) && s.str(&m.Route)
		case "model":
			return s.once(&seen, 1) && s.str(&m.Model)
		}
		return false
	})
}

func (s *fastScanner) usage(u *Usage) bool {
	var seen uint8
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "promptTokens":
			return s.once(&seen, 0) && s.int(&u.PromptTokens)
		case "completionTokens":
			return s.once(&seen, 1) && s.int(&u.CompletionTokens)
		case "totalTokens":
			return s.once(&seen, 2) && s.int(&u.TotalTokens)
		}
		return false
	})
}

// int reads an integer of at most 18 digits (no overflow possible).
func (s *fastScanner) int(dst *int) bool {
	neg := s.next('-')
	start := s.i
	var n int
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 18 || (digits > 1 && s.b[start] == '0') {
		return false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false
	}
	if neg {
		n = -n
	}
	*dst = n
	return true
}

func (s *fastScanner) bool(dst *bool) bool {
	rest := s.b[s.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.i += 4
		*dst = true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.i += 5
		*dst = false
	default:
		return false
	}
	return true
}

// str reads a string of valid UTF-8. Escapes are the ones encoding/json
// writes and reads alike, \u among them except for surrogates.
func (s *fastScanner) str(dst *string) bool {
	if !s.next('"') {
		return false
	}
	start := s.i
	escaped, high := false, false
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if high && !utf8.Valid(raw) {
				return false
			}
			if !escaped {
				*dst = string(raw)
				return true
			}
			return unescape(raw, dst)
		case c == '\\':
			escaped = true
			s.i++ // the escaped byte; unescape checks it
			if s.i < len(s.b) && s.b[s.i] == 'u' {
				s.i += 4
			}
		case c < 0x20:
			return false
		case c >= 0x80:
			high = true
		}
	}
	return false
}

// unescape decodes the escapes in raw, the inside of a JSON string.
func unescape(raw []byte, dst *string) bool {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+5 > len(raw) {
				return false
			}
			var r rune
			for _, h := range raw[i+1 : i+5] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return false
				}
			}
			if r >= 0xD800 && r <= 0xDFFF {
				return false
			}
			out = utf8.AppendRune(out, r)
			i += 4
		default:
			return false
		}
	}
	*dst = string(out)
	return true
}
