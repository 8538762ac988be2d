package journal

import (
	"strconv"
	"unicode/utf8"
)

// encodeFast writes the records a turn writes (chat and tool-call records)
// byte for byte as encoding/json's Marshal does, without reflection: the
// fields in struct order, omitempty honoured, strings escaped as Marshal
// escapes them (HTML characters, U+2028/U+2029, invalid UTF-8 as \ufffd).
// It reports false for any other value (a tool session's placement, a
// completion with tool calls, other types), which Encode leaves to
// encoding/json. FuzzEncodeMatchesEncodingJSON holds the two to the same
// bytes.
func encodeFast(v any) ([]byte, bool) {
	switch p := v.(type) {
	case *TurnStarted:
		if p == nil {
			return nil, false
		}
		return encodeFast(*p)
	case *ModelRequest:
		if p == nil {
			return nil, false
		}
		return encodeFast(*p)
	case *ModelCompletion:
		if p == nil {
			return nil, false
		}
		return encodeFast(*p)
	case *TurnTerminal:
		if p == nil {
			return nil, false
		}
		return encodeFast(*p)
	case *SessionPlaced:
		if p == nil {
			return nil, false
		}
		return encodeFast(*p)
	case *ToolCall:
		if p == nil {
			return nil, false
		}
		return encodeFast(*p)
	case *ToolResult:
		if p == nil {
			return nil, false
		}
		return encodeFast(*p)
	case TurnStarted:
		if len(p.History) != 0 {
			return nil, false
		}
		b := make([]byte, 0, 96+len(p.Instructions)+len(p.Input))
		b = appendIntField(b, `{"turn":`, p.Turn)
		b = appendStringField(b, `,"instructions":`, p.Instructions)
		b = appendStringField(b, `,"input":`, p.Input)
		b = appendIdentity(b, `,"model":`, p.Model)
		return append(b, '}'), true
	case ModelRequest:
		b := make([]byte, 0, 160)
		b = appendIntField(b, `{"turn":`, p.Turn)
		b = appendStringField(b, `,"model":`, p.Model)
		b = appendStringField(b, `,"sha256":`, p.SHA256)
		b = appendIntField(b, `,"bytes":`, p.Bytes)
		if p.Send != 0 {
			b = appendIntField(b, `,"send":`, p.Send)
		}
		return append(b, '}'), true
	case ModelCompletion:
		if len(p.ToolCalls) != 0 {
			return nil, false
		}
		b := make([]byte, 0, 80+len(p.Text))
		b = appendIntField(b, `{"turn":`, p.Turn)
		b = appendStringField(b, `,"model":`, p.Model)
		b = appendStringField(b, `,"text":`, p.Text)
		b = appendStringField(b, `,"finishReason":`, p.FinishReason)
		if p.Send != 0 {
			b = appendIntField(b, `,"send":`, p.Send)
		}
		if u := p.Usage; u != nil {
			b = appendIntField(b, `,"usage":{"promptTokens":`, u.PromptTokens)
			b = appendIntField(b, `,"completionTokens":`, u.CompletionTokens)
			b = appendIntField(b, `,"totalTokens":`, u.TotalTokens)
			b = append(b, '}')
		}
		return append(b, '}'), true
	case TurnTerminal:
		b := make([]byte, 0, 48+len(p.Answer)+len(p.Error))
		b = appendIntField(b, `{"turn":`, p.Turn)
		b = appendStringField(b, `,"state":`, p.State)
		if p.Answer != "" {
			b = appendStringField(b, `,"answer":`, p.Answer)
		}
		if p.Error != "" {
			b = appendStringField(b, `,"error":`, p.Error)
		}
		if p.DurationUs != 0 {
			b = appendIntField(b, `,"durationUs":`, p.DurationUs)
		}
		return append(b, '}'), true
	case SessionPlaced:
		if len(p.Tools) != 0 || p.Workspace != nil {
			return nil, false
		}
		b := make([]byte, 0, 160)
		b = appendStringField(b, `{"sessionId":`, p.SessionID)
		b = appendStringField(b, `,"harness":`, p.Harness)
		b = appendStringField(b, `,"purpose":`, p.Purpose)
		b = appendStringField(b, `,"exampleId":`, p.ExampleID)
		b = appendIdentity(b, `,"model":`, p.Model)
		return append(b, '}'), true
	case ToolCall:
		b := make([]byte, 0, 64+len(p.Arguments))
		b = appendIntField(b, `{"turn":`, p.Turn)
		b = appendIntField(b, `,"index":`, p.Index)
		b = appendStringField(b, `,"id":`, p.ID)
		b = appendStringField(b, `,"name":`, p.Name)
		b = appendStringField(b, `,"arguments":`, p.Arguments)
		return append(b, '}'), true
	case ToolResult:
		b := make([]byte, 0, 96+len(p.Result))
		b = appendIntField(b, `{"turn":`, p.Turn)
		b = appendIntField(b, `,"index":`, p.Index)
		b = appendStringField(b, `,"id":`, p.ID)
		b = appendStringField(b, `,"name":`, p.Name)
		b = appendStringField(b, `,"source":`, p.Source)
		b = append(b, `,"dispatched":`...)
		b = strconv.AppendBool(b, p.Dispatched)
		b = appendStringField(b, `,"result":`, p.Result)
		return append(b, '}'), true
	}
	return nil, false
}

func appendIntField(b []byte, key string, v int) []byte {
	return strconv.AppendInt(append(b, key...), int64(v), 10)
}

func appendStringField(b []byte, key, v string) []byte {
	return appendJSONString(append(b, key...), v)
}

func appendIdentity(b []byte, key string, m ModelIdentity) []byte {
	b = appendStringField(b, key+`{"route":`, m.Route)
	b = appendStringField(b, `,"model":`, m.Model)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString is encoding/json's string encoding with HTML escaping,
// as Marshal writes it.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
