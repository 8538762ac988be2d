package lsp_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

// TestDiagnosticsAfterEditsMatchAFreshParse types into an open document
// with the server's own per-document Parser (the default Options) and
// checks that each version's published diagnostics are exactly those of
// agentfile.Parse of that version's text, so the memo behind the
// keystrokes never shows a stale or shifted diagnostic.
func TestDiagnosticsAfterEditsMatchAFreshParse(t *testing.T) {
	lines := []string{
		"---",
		"tools: [ping]",
		"---",
		"Reply with ok.",
		"",
		"## Examples",
		"",
		"```yaml",
		"- id: one",
		"  input: first",
		"  assert:",
		"    - toolCalled: ping",
		"- id: two",
		"  input: second",
		"- id: three",
		"  input: third",
		"```",
		"",
	}
	type edit struct {
		line, from, to int
		text           string
	}
	edits := []struct {
		name string
		edit edit
	}{
		{"rename an id to a duplicate", edit{12, 6, 9, "one"}},
		{"insert lines above the block: every example shifts", edit{3, 0, 0, "Be brief.\nVery brief.\n"}},
		{"undeclare the tool a cached example asserts", edit{1, 8, 12, "pong"}},
		{"declare it again", edit{1, 8, 12, "ping"}},
		{"fix the duplicate", edit{14, 6, 9, "two"}},
		{"break one example's YAML", edit{15, 9, 15, "x: y"}},
		{"mend it", edit{15, 9, 13, "second"}},
	}
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	uri := "file:///work/typing.agent.md"
	text := strings.Join(lines, "\n")
	c.open(uri, 1, text)
	c.diagnosticsFor(0, uri, 1)
	for i, e := range edits {
		version := int32(i + 2)
		from := c.count()
		c.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": version},
			"contentChanges": []any{map[string]any{"range": rng(e.edit.line, e.edit.from, e.edit.line, e.edit.to), "text": e.edit.text}},
		})
		text = applyASCII(text, e.edit.line, e.edit.from, e.edit.to, e.edit.text)
		got, _ := c.diagnosticsFor(from, uri, version)
		want := expectedDiagnostics(agentfile.Parse("typing.agent.md", []byte(text)))
		// Only the parse is compared; refusals (kmx-refusal) have their own test.
		got.Diagnostics = slices.DeleteFunc(got.Diagnostics, func(d diagJ) bool { return d.Code == invocation.CodeRefusal })
		if !reflect.DeepEqual(got.Diagnostics, want) {
			t.Fatalf("%s: published\n%+v\nwant (a fresh parse)\n%+v\ntext:\n%s", e.name, got.Diagnostics, want, text)
		}
		if i == 0 && len(want) == 0 {
			t.Fatal("the duplicate id produced no diagnostic: the test edits the wrong text")
		}
	}
}

// applyASCII replaces characters [from, to) of one line of an ASCII text.
func applyASCII(text string, line, from, to int, with string) string {
	ls := strings.Split(text, "\n")
	ls[line] = ls[line][:from] + with + ls[line][to:]
	return strings.Join(ls, "\n")
}

func expectedDiagnostics(r agentfile.Result) []diagJ {
	out := []diagJ{}
	for _, d := range r.Diagnostics {
		out = append(out, diagJ{
			Range: rangeJ{
				Start: posJ{Line: d.Range.Start.Line, Character: d.Range.Start.Character},
				End:   posJ{Line: d.Range.End.Line, Character: d.Range.End.Character},
			},
			Severity: int(d.Severity),
			Code:     d.Code,
			Source:   "kmx",
			Message:  d.Message,
		})
	}
	return out
}
