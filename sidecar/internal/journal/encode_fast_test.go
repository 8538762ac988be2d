package journal

import (
	"bytes"
	"testing"
)

// encodeValues builds one value of every type encodeFast knows (as values
// and as pointers) from the strings and ints given, plus the forms it
// leaves to encoding/json.
func encodeValues(s1, s2, s3 string, n, m int, flag bool) []any {
	model := ModelIdentity{Route: s1, Model: s2}
	vs := []any{
		TurnStarted{Turn: n, Instructions: s1, Input: s3, Model: model},
		ModelRequest{Turn: n, Model: s2, SHA256: s3, Bytes: m, Send: m % 3},
		ModelCompletion{Turn: n, Model: s2, Text: s3, FinishReason: s1, Send: n % 3},
		ModelCompletion{Turn: n, Text: s3, ToolCalls: []ToolCallRequest{{ID: s1, Name: s2, Arguments: s3}}},
		TurnTerminal{Turn: n, State: s1, Answer: s3},
		TurnTerminal{Turn: m, State: s2, Error: s3},
		TurnTerminal{Turn: n, State: s1, Answer: s2, Error: s3},
		SessionPlaced{SessionID: s1, Harness: s2, Purpose: s3, ExampleID: s1, Model: model},
		SessionPlaced{SessionID: s1, Model: model, Tools: []OfferedTool{{Name: s2, State: s3}}},
		ToolCall{Turn: n, Index: m, ID: s1, Name: s2, Arguments: s3},
		ToolResult{Turn: n, Index: m, ID: s1, Name: s2, Source: s3, Dispatched: flag, Result: s3},
		TurnTerminal{Turn: n, State: s1, Answer: s2, DurationUs: m},
		ModelCompletion{Turn: n, Model: s2, Text: s3, FinishReason: s1, Usage: &Usage{PromptTokens: n, CompletionTokens: m, TotalTokens: n + m}},
		TurnStarted{Turn: n, Instructions: s1, Input: s3, Model: model, History: []HistoryMessage{{Role: s1, Content: s2}}},
		ModelIdentity{Route: s1, Model: s2},
	}
	for _, v := range vs[:len(vs)-1] {
		switch x := v.(type) {
		case TurnStarted:
			vs = append(vs, &x)
		case ModelRequest:
			vs = append(vs, &x)
		case ModelCompletion:
			vs = append(vs, &x)
		case TurnTerminal:
			vs = append(vs, &x)
		case SessionPlaced:
			vs = append(vs, &x)
		case ToolCall:
			vs = append(vs, &x)
		case ToolResult:
			vs = append(vs, &x)
		}
	}
	return append(vs, (*TurnStarted)(nil), (*ToolResult)(nil))
}

func checkEncodeMatches(t *testing.T, vs []any) {
	for _, v := range vs {
		got, errFast := Encode(v)
		want, errSlow := encodeJSON(v)
		if (errFast == nil) != (errSlow == nil) || !bytes.Equal(got, want) {
			t.Fatalf("%T %+v: Encode wrote %s (%v), encoding/json %s (%v)", v, v, got, errFast, want, errSlow)
		}
	}
}

var encodeSeedStrings = []string{
	"", "plain", `quote " backslash \ slash /`, "<b>&amp;</b>", "ctl \x00\x01\x08\x0c\n\r\t\x1f\x7f",
	"é 😀 \u2028 \u2029 \ufffd", "bad \xff\xfe utf8 \xe2\x82", "\xed\xa0\x80 surrogate bytes",
}

func TestEncodeMatchesEncodingJSON(t *testing.T) {
	for i, a := range encodeSeedStrings {
		b := encodeSeedStrings[(i+1)%len(encodeSeedStrings)]
		c := encodeSeedStrings[(i+3)%len(encodeSeedStrings)]
		for _, n := range []int{0, 1, -7, 1 << 40} {
			checkEncodeMatches(t, encodeValues(a, b, c, n, n*3+2, n%2 == 0))
		}
	}
}

// TestEncodeFastTakesTheTurnRecords: the records of a chat turn and of a
// tool call take the path without reflection (or the speed-up is gone).
func TestEncodeFastTakesTheTurnRecords(t *testing.T) {
	vs := encodeValues("a", "b", "c", 1, 2, true)
	for _, i := range []int{0, 1, 2, 4, 5, 7, 9, 10} {
		if _, ok := encodeFast(vs[i]); !ok {
			t.Errorf("%T took encoding/json", vs[i])
		}
	}
}

func FuzzEncodeMatchesEncodingJSON(f *testing.F) {
	for i, s := range encodeSeedStrings {
		f.Add(s, encodeSeedStrings[(i+2)%len(encodeSeedStrings)], "x", i, -i*1000, i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, n, m int, flag bool) {
		checkEncodeMatches(t, encodeValues(s1, s2, s3, n, m, flag))
	})
}
