package route

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// sameAsReference fails unless DecodeReply and the Decoder-based reference
// give the same completion and the same refusal (class, detail, status and
// text) for body.
func sameAsReference(t testing.TB, body []byte, model string) {
	t.Helper()
	got, gotErr := DecodeReply(body, model)
	want, wantErr := refDecodeReply(body, model)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q, model %q:\n completion %+v\n reference  %+v", body, model, got, want)
	}
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("body %q, model %q:\n error     %v\n reference %v", body, model, gotErr, wantErr)
	}
	if gotErr == nil {
		return
	}
	if gotErr.Error() != wantErr.Error() {
		t.Fatalf("body %q, model %q:\n error     %q\n reference %q", body, model, gotErr, wantErr)
	}
	if !reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("body %q, model %q:\n error     %#v\n reference %#v", body, model, gotErr, wantErr)
	}
}

// referenceSeeds are bodies aimed at the places a hand-written scanner can
// part from encoding/json's Decoder: where the first problem is, truncation
// against invalid bytes, numbers and literals cut short, escapes, key
// folding beyond ASCII, the tool/refusal/error keys' values, the switch to
// a folded-key set in a large object, and where the fields kmx reads sit.
func referenceSeeds() []string {
	ok := `{"model":"m","choices":[{"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`
	seeds := []string{
		ok, ok + " ", ok + "\n\t\r ", ok + "x", ok + "{", ok + `"`, ok + "]", ok + ",", ok + ":", ok + "0",
		"", " ", "{", "}", "[", "]", ":", ",", `"`, `"a"`, `"a`, `"a\x"`, "1", "1x", "-", "-x", "01", "-0", "0.", "0.x",
		"1e", "1e+", "1e+x", "1E5", "t", "tr", "tru", "true", "trux", "nul", "nullx", "f", "falsy", "x",
		`{"a"}`, `{"a":}`, `{"a" 1}`, `{"a"::1}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`, `{"a":1"b":2}`, `{1:2}`,
		`{"a":[1,]}`, `{"a":[,1]}`, `{"a":[1 2]}`, `{"a":[1`, `{"a":[`, `{"a":{`, `{"a":"`, `{"a":"\`, `{"a":"\u12`,
		`{"a":"\u12x"}`, `{"a":"\q"}`, "{\"a\":\"\x01\"}", `{"a":01}`, `{"a":-}`, `{"a":-`, `{"a":1.}`, `{"a":1.`,
		`{"a":1e}`, `{"a":1e`, `{"a":tru}`, `{"a":tru`, `{"a":nul`, `{"a":nulll}`, `{"a":truefalse}`,
		`{"a":1,"A":2}`, `{"a":1,"A"`, `{"a":1,"A"x`, `{"k":1,"` + "\u212a" + `":2}`, `{"s":1,"\u017f":2}`,
		`{"\u0041":1,"a":2}`, `{"a\u0000":1,"A\u0000":2}`, `{"\ud800":1,"\ufffd":2}`, `{"\ud83d\ude00":1,"😀":2}`,
		`{"\udc00\ud800":1}`, `{"\ud800\u0041":1,"\ufffdA":2}`, `{"ß":1,"ẞ":2}`, `{"σ":1,"ς":2}`, `{"i":1,"ı":2}`,
		`{"tool_calls":[]}`, `{"tool_calls":[ ]x}`, `{"tool_calls":[1}`, `{"tool_calls":[`, `{"tool_calls":[x`,
		`{"tool_calls":[,`, `{"tool_calls"`, `{"tool_calls"x`, `{"tool_calls":01}`, `{"tool_calls":{`, `{"tool_calls":}`,
		`{"tool_calls":"a\x"}`, `{"tool_calls":null`, `{"tool_calls":nul`, `{"TOOL-CALLS":null,"tool_calls":1}`,
		`{"FUNCT` + "\u0130" + `ON_CALL":{}}`, `{"TOOL_CALL` + "\u212a" + `":{}}`, `{"x_tool_use_y":0}`,
		`{"refusal":""}`, `{"refusal":"" x}`, `{"refusal":"\u0000"}`, `{"refusal":"a"}`, `{"refusal":0}`, `{"refusal":[]}`,
		`{"re-fu_sal":null}`, `{"Refusal":"`, `{"error":""}`, `{"error":null}`, `{"error":0}`, `{"Error":{}}`,
		`{"a":{"error":1}}`, `{"e_r_r_o_r":1}`, `{"model":"m","choices":[],"error":"x"}`,
		`{"model":"m"}`, `{"model":"m","choices":null}`, `{"model":"m","choices":{}}`, `{"model":"m","choices":"x"}`,
		`{"model":"m","choices":[null]}`, `{"model":"m","choices":[1]}`, `{"model":"m","choices":[[]]}`,
		`{"model":"m","choices":[{},{}]}`, `{"model":"m","choices":[{}]}`, `{"model":"m","choices":[{"finish_reason":"stop"}]}`,
		`{"model":"m","choices":[{"finish_reason":"stop","message":null}]}`,
		`{"model":"m","choices":[{"finish_reason":"stop","message":[]}]}`,
		`{"model":"m","choices":[{"finish_reason":"stop","message":{}}]}`,
		`{"model":"m","choices":[{"finish_reason":"stop","message":{"content":" \n"}}]}`,
		`{"model":"m","choices":[{"finish_reason":"stop","message":{"content":"\u0020"}}]}`,
		`{"model":"m","choices":[{"finish_reason":"stop","message":{"content":"a\ud800b\"\\\/\b\f\n\r\t"}}]}`,
		`{"model":"m","choices":[{"finish_reason":"stop","message":{"role":null,"content":"a"}}]}`,
		`{"model":"m","choices":[{"finish_reason":"stop","message":{"role":"user","content":"a"}}]}`,
		`{"model":"m","choices":[{"finish_reason":"stop","message":{"role":"assist\u0061nt","content":"a"}}]}`,
		`{"model":"m","choices":[{"finish_reason":"st\u006fp","message":{"content":"a"}}]}`,
		`{"mod\u0065l":"\u006d","choices":[{"finish_reason":"stop","message":{"content":"a"}}]}`,
		`{"model":"m","choices":[{"finish_reason":"length","message":{"content":"a"}}]}`,
		`{"model":"m","choices":[{"finish_reason":"content_filter"}]}`,
		`{"model":"m","choices":[{"finish_reason":"tool_calls"}]}`, `{"model":"m","choices":[{"finish_reason":"function_call"}]}`,
		`{"model":"m","choices":[{"finish_reason":null}]}`, `{"model":"m","choices":[{"finish_reason":1}]}`,
		`{"model":"","choices":[]}`, `{"model":null}`, `{"model":["m"]}`, `{"model":{"m":1}}`,
		`{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}],"model":"m"}`,
		`{"x":{"model":"n"},"model":"m","choices":[{"x":{"message":{}},"message":{"content":"a","x":{"content":""}},"finish_reason":"stop"}]}`,
		`{"model":"m","choices":[{"message":{"content":"a"},"finish_reason":"stop"},{"message":"b"}]}`,
		`{"model":"m","choices":[{"message":{"content":"a","Content":"b"},"finish_reason":"stop"}]}`,
	}
	// Nesting at and around the depth bound, with and without a tool key's
	// own array at the deepest level.
	for _, d := range []int{62, 63, 64, 65} {
		seeds = append(seeds, strings.Repeat(`{"a":`, d)+"1"+strings.Repeat("}", d))
		seeds = append(seeds, strings.Repeat(`[`, d))
		seeds = append(seeds, `{"a":`+strings.Repeat(`[`, d-1)+strings.Repeat(`]`, d-1)+"}")
		seeds = append(seeds, strings.Repeat(`{"a":`, d-1)+`{"tool_calls":[]}`+strings.Repeat("}", d-1))
	}
	// Objects with many keys, so the folded-key set takes over, with the
	// duplicate before, at and after the switch.
	for _, n := range []int{15, 16, 17, 40} {
		var b strings.Builder
		b.WriteString(`{"model":"m","choices":[{"message":{"content":"a"},"finish_reason":"stop"}]`)
		for i := range n {
			b.WriteString(`,"k` + strings.Repeat("x", i) + `":1`)
		}
		seeds = append(seeds, b.String()+"}")
		seeds = append(seeds, b.String()+`,"KX":2}`)
		seeds = append(seeds, b.String()+`,"`+"\u212a"+`":2}`)
		seeds = append(seeds, b.String()+`,"MODEL":2}`)
	}
	return seeds
}

// TestDecodeReplyMatchesReference holds the single-pass decoder to the
// Decoder-based one on the reply corpus, the seeds above, every prefix of
// each (truncation at every byte) and every one-byte deletion of the corpus.
func TestDecodeReplyMatchesReference(t *testing.T) {
	var bodies [][]byte
	for _, c := range loadReplyCorpus(t) {
		bodies = append(bodies, c.body)
	}
	for _, s := range referenceSeeds() {
		bodies = append(bodies, []byte(s))
	}
	n := 0
	for _, body := range bodies {
		for _, model := range []string{testModel, "m", ""} {
			sameAsReference(t, body, model)
			n++
		}
		for i := range body {
			sameAsReference(t, body[:i], testModel)
			cut := append(bytes.Clone(body[:i]), body[i+1:]...)
			sameAsReference(t, cut, testModel)
			n += 2
		}
	}
	t.Logf("%d bodies decoded alike", n)
}

func FuzzDecodeReplyMatchesReference(f *testing.F) {
	for _, c := range loadReplyCorpus(f) {
		f.Add(c.body, testModel)
	}
	for _, s := range referenceSeeds() {
		f.Add([]byte(s), "m")
	}
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		sameAsReference(t, body, model)
	})
}
