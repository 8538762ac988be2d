package agentfile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// sameResult fails unless a and b are deep-equal and render the same
// JSON (nil and empty lists differ there, and the editor sees JSON).
func sameResult(t testing.TB, what string, got, want Result) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !reflect.DeepEqual(got, want) || string(g) != string(w) {
		t.Fatalf("%s: the result differs from Parse's\n got: %.2000s\nwant: %.2000s", what, g, w)
	}
}

const memoHead = "---\ntools: [ping, pong]\n---\nDo it.\n\n## Examples\n\n```yaml\n"

func memoExamples(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("- id: ex" + string(rune('a'+i)) + "\n  input: |\n    say ✓ " + strings.Repeat("x", i) + "\n  assert:\n    - contains: ok\n    - llmJudge: {rubric: r, threshold: 70}\n    - toolCalled: ping\n  tools:\n    ping:\n      recorded:\n        calls:\n          - arguments: {q: 1}\n            result: [ok]\n")
	}
	return b.String()
}

// TestParserMatchesParseAcrossEdits feeds one Parser a sequence of
// versions of a document, as an editor does, and holds every result to
// the pure Parse of the same text.
func TestParserMatchesParseAcrossEdits(t *testing.T) {
	base := memoHead + memoExamples(6) + "```\n"
	tests := []struct {
		name     string
		versions []string
	}{
		{"edit one input", []string{base, strings.Replace(base, "say ✓ xx\n", "say ✓ xy\n", 1)}},
		{"insert text before the block shifts every example", []string{base, strings.Replace(base, "Do it.", "Do it.\nAnd more, 🚀.\n", 1), base}},
		{"insert an example in the middle", []string{base, strings.Replace(base, "- id: exc", "- id: new\n  input: n\n- id: exc", 1)}},
		{"duplicate id appears and disappears", []string{base, strings.Replace(base, "id: exd", "id: exb", 1), base}},
		{"a tool is undeclared: cached tool checks must change", []string{base, strings.Replace(base, "tools: [ping, pong]", "tools: [pong]", 1), base}},
		{"the tool declaration breaks", []string{base, strings.Replace(base, "tools: [ping, pong]", "tools: {ping: 1}", 1), base}},
		{"an example becomes invalid YAML", []string{base, strings.Replace(base, "input: |\n    say ✓ xxx\n", "input: x: y\n", 1), base}},
		{"an alias to another example's anchor", []string{base, strings.Replace(strings.Replace(base, "contains: ok", "contains: &a ok", 1), "- id: exf\n", "- id: exf\n  x: *a\n", 1)}},
		{"a repeated key (its message names a line)", []string{base, strings.Replace(base, "Do it.", "Do\nit.", 1), strings.Replace(strings.Replace(base, "Do it.", "Do\nit.", 1), "    - contains: ok\n", "    - {contains: ok, contains: no}\n", 1)}},
		{"an escaped credential shape", []string{base, strings.Replace(base, "input: |\n    say ✓ x\n", "input: \"\\x67h"+"p_"+strings.Repeat("a", 36)+"\"\n", 1), strings.Replace(base, "Do it.", "Do\nit.", 1)}},
		{"the block is being typed at the end", []string{memoHead + memoExamples(3), memoHead + memoExamples(4), memoHead + memoExamples(4) + "- id: cut\n  inp"}},
		{"a document marker before the list", []string{base, strings.Replace(base, "```yaml\n", "```yaml\n---\n", 1)}},
		{"the list becomes indented", []string{base, memoHead + indent(memoExamples(6)) + "```\n"}},
		{"CRLF line ends", []string{strings.ReplaceAll(base, "\n", "\r\n"), strings.ReplaceAll(strings.Replace(base, "Do it.", "Do it again.", 1), "\n", "\r\n")}},
		{"an empty value at the end of an item", []string{base, strings.Replace(base, "            result: [ok]\n- id: exc", "            result:\n- id: exc", 1)}},
		{"the same bytes twice", []string{base, base}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ps Parser
			for i, v := range tt.versions {
				sameResult(t, "version "+string(rune('1'+i)), ps.Parse("m.agent.md", []byte(v)), Parse("m.agent.md", []byte(v)))
			}
		})
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// TestParserResultsShareNoMemory changes everything a caller can reach in
// one result and checks the next parse is unaffected.
func TestParserResultsShareNoMemory(t *testing.T) {
	src := []byte(memoHead + memoExamples(3) + "```\n")
	var ps Parser
	ps.Parse("m.agent.md", src)
	r := ps.Parse("m.agent.md", src)
	for i := range r.Agent.Examples {
		ex := &r.Agent.Examples[i]
		*ex.Assertions[1].Operands().Threshold = 1
		ex.Assertions[0].Value = "changed"
		ex.Tools[0].Calls[0].Result = "changed"
	}
	sameResult(t, "after changing a result", ps.Parse("m.agent.md", src), Parse("m.agent.md", src))
}

// TestParserForgetsItemsTheTextNoLongerHolds bounds the memo by the
// document: after a parse it holds the items of that parse only.
func TestParserForgetsItemsTheTextNoLongerHolds(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{{"six examples", 6}, {"one example", 1}, {"three examples", 3}}
	var ps Parser
	for _, tt := range tests {
		ps.Parse("m.agent.md", []byte(memoHead+memoExamples(tt.n)+"```\n"))
		if got := len(ps.memo.prev); got != tt.n {
			t.Errorf("%s: the memo holds %d items, want %d", tt.name, got, tt.n)
		}
	}
}

// FuzzParserMatchesParse holds every way of reading the Examples block to
// the whole-block decode: the pure Parse (by chunks of entries), chunks of
// one entry and of a few, every item decoded on its own, and a Parser that
// has seen another version of the text first (b, then a).
func FuzzParserMatchesParse(f *testing.F) {
	base := memoHead + memoExamples(4) + "```\n"
	f.Add([]byte(base), []byte(strings.Replace(base, "say", "tell", 1)))
	f.Add([]byte(string(benchFile(3))), []byte(string(benchFile(4))))
	f.Add([]byte("## Examples\n```yaml\n- id: a\n  input: b\n-\n# c\n  - x\n- id: c\n  input: \"d\n- e\"\n```\n"), []byte("## Examples\n```yaml\n- id: a\n  input: b\n```\n"))
	f.Add([]byte("## Examples\n```yaml\n- id: a\n  input: &in b\n- id: c\n  input: *in\n  assert: [{contains: x}]\n- id: d\n  input: e\n```\n"), []byte(base))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		whole := newParser("f.agent.md", a)
		whole.wholeBlock = true
		want := whole.parse()
		sameResult(t, "by chunks", Parse("f.agent.md", a), want)
		for _, size := range []int{1, 200} {
			p := newParser("f.agent.md", a)
			p.chunkBytes = size
			sameResult(t, fmt.Sprintf("by chunks of %d bytes", size), p.parse(), want)
		}
		p := newParser("f.agent.md", a)
		p.perEntry = true
		sameResult(t, "item by item", p.parse(), want)
		var ps Parser
		ps.Parse("f.agent.md", b)
		sameResult(t, "warm Parser", ps.Parse("f.agent.md", a), want)
	})
}

// TestParseDecodesALargeBlockByChunks pins what keeps kmx test's parse of a
// large file small: the pure Parse decodes a plain block a chunk at a time
// (so only one chunk's YAML tree is alive), and falls back to one
// whole-block decode, with the same result, when a chunk does not decode
// on its own.
func TestParseDecodesALargeBlockByChunks(t *testing.T) {
	src := benchFile(2000)
	p := newParser("bench.agent.md", src)
	r := p.parse()
	if r.State != Valid || len(r.Agent.Examples) != 2000 {
		t.Fatalf("generated file is %v with %d examples", r.State, len(r.Agent.Examples))
	}
	if want := len(src) / chunkBytes; p.chunks < want {
		t.Errorf("decoded %d KiB of examples in %d chunks, want at least %d of at most %d KiB", len(src)>>10, p.chunks, want, chunkBytes>>10)
	}
	whole := newParser("bench.agent.md", src)
	whole.wholeBlock = true
	sameResult(t, "by chunks", r, whole.parse())

	// An alias to an anchor in an earlier chunk: each chunk is its own
	// YAML document, so the pure Parse decodes the whole block instead.
	alias := []byte("## Examples\n```yaml\n- id: a\n  input: &in b\n- id: c\n  input: *in\n```\n")
	p = newParser("f.agent.md", alias)
	p.chunkBytes = 1
	r = p.parse()
	if p.chunks != 0 {
		t.Errorf("a block whose alias spans chunks was decoded in %d chunks, want the whole-block decode", p.chunks)
	}
	if r.State != Valid || len(r.Agent.Examples) != 2 || r.Agent.Examples[1].Input != "b" {
		t.Errorf("the alias's example reads %+v (%v), want input b", r.Agent.Examples, r.State)
	}
}

// TestInstructionsDoNotKeepTheFileAlive pins that the parsed Agent holds no
// slice of the file's text: kmx test keeps the Agent for the whole run, and
// instructions sliced from the text kept a 2,000-example file's 300 KB
// alive beside its parsed examples.
func TestInstructionsDoNotKeepTheFileAlive(t *testing.T) {
	for _, sibling := range []bool{false, true} {
		p := newParser("bench.agent.md", benchFile(3))
		p.sibling = sibling
		r := p.parse()
		text, ins := p.src.text, r.Agent.Instructions
		if ins == "" {
			t.Fatalf("sibling=%v: no instructions parsed", sibling)
		}
		start := uintptr(unsafe.Pointer(unsafe.StringData(text)))
		at := uintptr(unsafe.Pointer(unsafe.StringData(ins)))
		if at >= start && at < start+uintptr(len(text)) {
			t.Errorf("sibling=%v: the instructions are a slice of the file's text", sibling)
		}
	}
}

// TestParserMultiTurnResultsShareNoMemory is the same for a multi-turn
// example's turns and the trajectory assertions' lists and bounds.
func TestParserMultiTurnResultsShareNoMemory(t *testing.T) {
	src := readFiles(t, "testdata/valid")["conversation.agent.md"]
	var ps Parser
	ps.Parse("c.agent.md", src)
	r := ps.Parse("c.agent.md", src)
	turn := &r.Agent.Examples[0].Turns[0]
	turn.Input = "changed"
	turn.Assertions[1].Operands().Names[0] = "changed"
	*turn.Assertions[2].Operands().Min = 7
	r.Agent.Examples[1].Assertions[0].Operands().Names[1] = "changed"
	sameResult(t, "after changing a result", ps.Parse("c.agent.md", src), Parse("c.agent.md", src))
}
