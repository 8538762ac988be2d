package journal

import (
	"reflect"
	"strings"
	"testing"
)

// decodeTargets makes one fresh value of each type decodeFast knows, plus
// one it does not, prefilled so that "absent fields are left alone" is
// checked too.
func decodeTargets() []any {
	return []any{
		&TurnStarted{Turn: 9, Instructions: "old", Model: ModelIdentity{Route: "r0"}},
		&ModelRequest{Send: 3},
		&ModelCompletion{Text: "old", ToolCalls: []ToolCallRequest{{ID: "x"}}},
		&TurnTerminal{Answer: "old"},
		&SessionPlaced{Tools: []OfferedTool{{Name: "t"}}},
		&ToolCall{Index: 4},
		&ToolResult{Dispatched: true},
		&ModelIdentity{Model: "old"},
	}
}

func decodeSeeds(t testing.TB) [][]byte {
	t.Helper()
	model := ModelIdentity{Route: "fake", Model: "fake-1"}
	vs := []any{
		SessionPlaced{SessionID: "8c0e5a52-0000-4000-8000-000000000000", Harness: "chat", Purpose: "agent", ExampleID: "greets", Model: model},
		SessionPlaced{SessionID: "s", Harness: "kmx-local-tools-v1", Purpose: "agent", Model: model, Tools: []OfferedTool{{Name: "t", State: "on", Source: "live"}}},
		TurnStarted{Turn: 1, Instructions: "Reply <b>\"hi\"</b> & go\n\ttab \u2028 é 😀 \x01", Input: "week 48", Model: model},
		ModelRequest{Turn: 2, Model: "m", SHA256: strings.Repeat("ab", 32), Bytes: 1234567, Send: 2},
		ModelCompletion{Turn: 1, Model: "m", Text: "hello \\ world / \u007f", FinishReason: "stop"},
		ModelCompletion{Turn: 1, Model: "m", ToolCalls: []ToolCallRequest{{ID: "c1", Name: "n", Arguments: "{}"}}},
		TurnTerminal{Turn: 1, State: StateCompleted, Answer: "a"},
		TurnTerminal{Turn: -3, State: StateFailed, Error: "boom"},
		TurnTerminal{Turn: 2, State: StateCompleted, Answer: "a", DurationUs: 1234},
		ModelCompletion{Turn: 1, Model: "m", Text: "t", FinishReason: "stop", Send: 1, Usage: &Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15}},
		TurnStarted{Turn: 1, Instructions: "i", Input: "two", Model: model, History: []HistoryMessage{{Role: "user", Content: "one"}, {Role: "assistant", Content: "Turn 1: one"}}},
		ToolCall{Turn: 1, Index: 2, ID: "c", Name: "n", Arguments: `{"q":"x"}`},
		ToolResult{Turn: 1, Index: 1, ID: "c", Name: "n", Source: "live", Dispatched: true, Result: "ok"},
		ToolResult{Turn: 1, Source: "disabled"},
	}
	var out [][]byte
	for _, v := range vs {
		b, err := Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	// Forms Encode never writes: encoding/json must judge them.
	for _, s := range []string{
		`{"turn":1, "state":"completed"}`, `{"Turn":1,"state":"completed"}`, `{"turn":1,"turn":2}`,
		`{"turn":1.0}`, `{"turn":1e2}`, `{"turn":01}`, `{"turn":-0}`, `{"turn":9999999999999999999}`, `{"turn":null}`,
		`{"turn":1,"extra":1}`, `{"turn":1}x`, `{"turn":1} `, `{"answer":"\ud83d\ude00"}`, `{"answer":"\u00e9\u0041"}`,
		`{"answer":"bad \xff utf8"}`, `{"answer":"ctl ` + "\x01" + `"}`, `{"answer":"\x"}`, `{"answer":"\u12"}`, `{"answer":"\u"}`,
		`{"dispatched":true}`, `{"dispatched":tru}`, `{"model":{"route":"r","model":"m","x":1}}`, `{"model":{"Route":"r"}}`,
		`{}`, `{`, ``, `[]`, `null`, `{"sessionId":"s","tools":null}`, `{"text":"a","toolCalls":[]}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// checkDecodeMatches decodes data into each target with Decode and with
// encoding/json alone and requires the same outcome and the same value.
func checkDecodeMatches(t *testing.T, data []byte) {
	fast, slow := decodeTargets(), decodeTargets()
	for i := range fast {
		errFast := Decode(data, fast[i])
		errSlow := decodeJSON(data, slow[i])
		if (errFast == nil) != (errSlow == nil) {
			t.Fatalf("%T from %q: Decode error %v, encoding/json error %v", fast[i], data, errFast, errSlow)
		}
		if errSlow == nil && !reflect.DeepEqual(fast[i], slow[i]) {
			t.Fatalf("%T from %q: Decode made %+v, encoding/json %+v", fast[i], data, fast[i], slow[i])
		}
	}
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range decodeSeeds(t) {
		checkDecodeMatches(t, s)
	}
}

// TestDecodeFastTakesTheTurnRecords: the records of a chat turn and of a
// tool call, as Encode writes them, take the path without reflection (or
// the speed-up is gone).
func TestDecodeFastTakesTheTurnRecords(t *testing.T) {
	seeds := decodeSeeds(t)
	for _, c := range []struct {
		seed int
		v    any
	}{
		{0, &SessionPlaced{}}, {2, &TurnStarted{}}, {3, &ModelRequest{}}, {4, &ModelCompletion{}},
		{6, &TurnTerminal{}}, {7, &TurnTerminal{}}, {8, &TurnTerminal{}}, {9, &ModelCompletion{}},
		{11, &ToolCall{}}, {12, &ToolResult{}}, {13, &ToolResult{}},
	} {
		if !decodeFast(seeds[c.seed], c.v) {
			t.Errorf("%T from %s took encoding/json", c.v, seeds[c.seed])
		}
	}
}

func FuzzDecodeMatchesEncodingJSON(f *testing.F) {
	for _, s := range decodeSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecodeMatches(t, data) })
}
