package route

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// diffOffered is the tool set the differential tests offer.
var diffOffered = []ToolDef{{Name: "search", Parameters: `{"type":"object"}`}, {Name: "read_file", Parameters: `{"type":"object"}`}}

// sameToolAsReference fails unless DecodeToolReply and its Decoder-based
// reference give the same completion and the same refusal for body, on
// send 1 and on send 2.
func sameToolAsReference(t testing.TB, body []byte, model string) {
	t.Helper()
	for _, after := range []bool{false, true} {
		got, gotErr := DecodeToolReply(body, model, diffOffered, after)
		want, wantErr := refDecodeToolReply(body, model, diffOffered, after)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("body %q, model %q, after %v:\n completion %+v\n reference  %+v", body, model, after, got, want)
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("body %q, model %q, after %v:\n error     %v\n reference %v", body, model, after, gotErr, wantErr)
		}
		if gotErr != nil && !reflect.DeepEqual(gotErr, wantErr) {
			t.Fatalf("body %q, model %q, after %v:\n error     %#v\n reference %#v", body, model, after, gotErr, wantErr)
		}
	}
}

// toolReply is a reply with the given message fields and finish reason.
func toolReply(model, finish, message string) string {
	return `{"id":"c","model":"` + model + `","choices":[{"index":0,"message":` + message + `,"finish_reason":"` + finish + `"}]}`
}

// toolSeeds are tool-path bodies aimed at where the call may be and where
// it may not, the call's shape, the batch bounds and the arguments' rules.
func toolSeeds() []string {
	call := func(id, name, args string) string {
		b, _ := json.Marshal(args)
		return `{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + string(b) + `}}`
	}
	msg := func(calls ...string) string {
		return `{"role":"assistant","content":null,"tool_calls":[` + strings.Join(calls, ",") + `]}`
	}
	six := make([]string, 6)
	for i := range six {
		six[i] = call(string(rune('a'+i)), "search", `{}`)
	}
	seeds := []string{
		toolReply("m", "tool_calls", msg(call("c1", "search", `{"q":"x"}`))),
		toolReply("m", "tool_calls", msg(call("c1", "search", `{}`), call("c2", "read_file", `{"path":"a","n":[1,{"k":null}]}`))),
		toolReply("m", "tool_calls", msg(six[:5]...)),
		toolReply("m", "tool_calls", msg(six...)),
		toolReply("m", "tool_calls", msg(call("c1", "search", `{}`), call("c1", "search", `{}`))),
		toolReply("m", "tool_calls", msg(call("c1", "other", `{}`))),
		toolReply("m", "tool_calls", msg(call("c1", "Search", `{}`))),
		toolReply("m", "tool_calls", msg(call("c1", "search", `[]`))),
		toolReply("m", "tool_calls", msg(call("c1", "search", `"x"`))),
		toolReply("m", "tool_calls", msg(call("c1", "search", ``))),
		toolReply("m", "tool_calls", msg(call("c1", "search", `{} {}`))),
		toolReply("m", "tool_calls", msg(call("c1", "search", `{"a":1,"a":2}`))),
		toolReply("m", "tool_calls", msg(call("c1", "search", `{"a":{"b":1,"B":2}}`))),
		toolReply("m", "tool_calls", msg(call("c1", "search", `{"tool_calls":[1],"refusal":"x","error":1}`))),
		toolReply("m", "tool_calls", msg(call("", "search", `{}`))),
		toolReply("m", "stop", msg(call("c1", "search", `{}`))),
		toolReply("m", "tool_calls", msg()),
		toolReply("m", "tool_calls", `{"role":"assistant","content":"x"}`),
		toolReply("m", "tool_calls", `{"content":"thinking","tool_calls":[`+call("c1", "search", `{}`)+`]}`),
		toolReply("m", "tool_calls", `{"content":1,"tool_calls":[`+call("c1", "search", `{}`)+`]}`),
		toolReply("m", "tool_calls", `{"tool_calls":[`+call("c1", "search", `{}`)+`]}`),
		toolReply("m", "tool_calls", `{"tool_calls":{}}`),
		toolReply("m", "tool_calls", `{"tool_calls":"x"}`),
		toolReply("m", "tool_calls", `{"tool_calls":[1]}`),
		toolReply("m", "tool_calls", `{"tool_calls":[{"id":"c1","type":"tool","function":{"name":"search","arguments":"{}"}}]}`),
		toolReply("m", "tool_calls", `{"tool_calls":[{"id":"c1","type":"function","function":[]}]}`),
		toolReply("m", "tool_calls", `{"tool_calls":[{"id":"c1","type":"function","function":{"arguments":"{}"}}]}`),
		toolReply("m", "tool_calls", `{"tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":{}}}]}`),
		toolReply("m", "tool_calls", `{"tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{}","Name":"x"}}]}`),
		toolReply("m", "tool_calls", `{"tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{}","function_call":null}}]}`),
		toolReply("m", "tool_calls", `{"tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{}","tool_call":1}}]}`),
		toolReply("m", "tool_calls", `{"Tool_Calls":[`+call("c1", "search", `{}`)+`]}`),
		toolReply("m", "tool_calls", `{"toolCalls":[`+call("c1", "search", `{}`)+`]}`),
		toolReply("m", "tool_calls", `{"tool_calls":[`+call("c1", "search", `{}`)+`],"TOOL_CALLS":null}`),
		toolReply("m", "tool_calls", `{"tool_calls":null,"content":"x"}`),
		toolReply("m", "stop", `{"tool_calls":null,"content":"x"}`),
		toolReply("m", "stop", `{"tool_calls":[],"content":"x"}`),
		toolReply("m", "stop", `{"content":"x","function_call":{"name":"search"}}`),
		toolReply("m", "function_call", `{"content":"x"}`),
		toolReply("m", "stop", `{"content":"x","refusal":"no"}`),
		toolReply("m", "length", msg(call("c1", "search", `{}`))),
		toolReply("n", "tool_calls", msg(call("c1", "search", `{}`))),
		`{"model":"m","x":{"tool_calls":[1]},"choices":[{"message":{"content":"a"},"finish_reason":"stop"}]}`,
		`{"model":"m","choices":[{"message":{"content":"a"},"finish_reason":"stop","tool_calls":[1]}]}`,
		`{"model":"m","choices":[{"message":{"content":"a"},"finish_reason":"stop"},{"message":{"tool_calls":[1]}}]}`,
		`{"model":"m","choices":{"#0":{"message":{"tool_calls":[1]}}}}`,
		`{"model":"m","choices/#0":{"message":{"tool_calls":[1]}}}`,
		`{"model":"m","choices":[[{"message":{"tool_calls":[1]}}]]}`,
		`{"model":"m","choices":[{"message":{"x":{"tool_calls":[1]}},"finish_reason":"stop"}]}`,
		`{"model":"m","choices":[{"message":{"tool_calls":[`,
		`{"model":"m","choices":[{"message":{"tool_calls":[{"id":"c1","id":"c2"}]}}]}`,
	}
	return append(seeds, referenceSeeds()...)
}

// TestDecodeToolReplyMatchesReference holds DecodeToolReply to its
// reference on the tool seeds, the tool-free seeds and the reply corpus,
// with every prefix and one-byte deletion of the tool seeds.
func TestDecodeToolReplyMatchesReference(t *testing.T) {
	var bodies [][]byte
	for _, c := range loadReplyCorpus(t) {
		bodies = append(bodies, c.body)
	}
	for _, s := range toolSeeds() {
		bodies = append(bodies, []byte(s))
	}
	n := 0
	for _, body := range bodies {
		for _, model := range []string{testModel, "m", ""} {
			sameToolAsReference(t, body, model)
			n++
		}
		if len(body) > 600 {
			continue
		}
		for i := range body {
			sameToolAsReference(t, body[:i], "m")
			cut := append(bytes.Clone(body[:i]), body[i+1:]...)
			sameToolAsReference(t, cut, "m")
			n += 2
		}
	}
	t.Logf("%d bodies decoded alike", n)
}

func FuzzDecodeToolReplyMatchesReference(f *testing.F) {
	for _, s := range toolSeeds() {
		f.Add([]byte(s), "m")
	}
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		sameToolAsReference(t, body, model)
	})
}

// FuzzDecodeToolReply checks what any accepted tool-path reply is: valid
// JSON without a repeated key, the model asked for, and either text or a
// batch of 1 to 5 calls with unique IDs, offered names and arguments that
// are one JSON object; and that a refusal is kmx's own text.
func FuzzDecodeToolReply(f *testing.F) {
	for _, s := range toolSeeds() {
		f.Add([]byte(s), "m", false)
	}
	f.Fuzz(func(t *testing.T, body []byte, model string, after bool) {
		comp, err := DecodeToolReply(body, model, diffOffered, after)
		if err != nil {
			var re *ReplyError
			if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "compatible route: "+re.Class.text()) {
				t.Fatalf("error %v is not a ReplyError in kmx's words", err)
			}
			return
		}
		if !json.Valid(body) || hasDuplicateKey(body, 0) {
			t.Fatalf("accepted %q", body)
		}
		if comp.Model != model || model == "" {
			t.Fatalf("accepted completion %+v for model %q", comp, model)
		}
		if len(comp.ToolCalls) == 0 {
			if comp.FinishReason != "stop" || strings.TrimSpace(comp.Text) == "" {
				t.Fatalf("accepted text completion %+v", comp)
			}
			return
		}
		if after || comp.FinishReason != "tool_calls" || len(comp.ToolCalls) > MaxToolCalls {
			t.Fatalf("accepted batch %+v (after %v)", comp, after)
		}
		ids := map[string]bool{}
		for _, tc := range comp.ToolCalls {
			var obj map[string]json.RawMessage
			if tc.ID == "" || ids[tc.ID] || (tc.Name != "search" && tc.Name != "read_file") ||
				json.Unmarshal([]byte(tc.Arguments), &obj) != nil || obj == nil || hasDuplicateKey([]byte(tc.Arguments), 0) {
				t.Fatalf("accepted call %+v", tc)
			}
			ids[tc.ID] = true
		}
	})
}
