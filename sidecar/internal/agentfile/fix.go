package agentfile

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Fix is a mechanical change that resolves a diagnostic or fills in a part
// the file lacks, in the manner of gopls' quick fixes: the editor offers it
// as a code action, `kmx check` never applies it. Fixes are computed from
// the text alone, like Parse.
type Fix struct {
	Title string
	// Code is the diagnostic the fix resolves; empty for a fix that goes
	// with no diagnostic (such as adding an assertion).
	Code string
	// Range is where the fix is offered: the diagnostic's range, or the
	// example it changes.
	Range Range
	// Preferred marks the fix an editor may apply on "fix all".
	Preferred bool
	// Edits change the file, in source order and never overlapping.
	Edits []Edit
}

// Edit replaces Range with NewText.
type Edit struct {
	Range   Range
	NewText string
}

// Skeleton text that "Add examples" writes: one example, commented, that
// runs as it is (it fails until its placeholders are replaced).
const (
	skeletonComment = "# Each example sends `input` as the user message; it passes when every\n" +
		"# assertion holds (contains, notContains, regex, llmJudge). Replace the\n" +
		"# placeholders, then ▶ Run example. See docs/agent-file.md.\n"
	skeletonExample = "- id: first-example\n" +
		"  input: Replace this with a message a user would send\n" +
		"  assert:\n" +
		"    - contains: Replace this with text the answer must contain\n"
	placeholderAssert = "- contains: Replace this with text the answer must contain"
)

// ExamplesSkeleton is the YAML list "Add examples" writes: a comment and
// one example.
func ExamplesSkeleton() string { return skeletonComment + skeletonExample }

// Fixes returns the fixes for one parse of src (the Result Parse returned
// for these bytes).
func Fixes(src []byte, res Result) []Fix { return FixesIn("", src, res) }

// FixesIn returns the fixes in one file of a parse: file is "" for the
// agent file, or the examples file's base name (Diagnostic.File) with src
// that file's text.
func FixesIn(file string, src []byte, res Result) []Fix {
	s := newSource(string(src))
	examplesHere := res.Agent != nil && res.Agent.ExamplesFile == file
	var out []Fix
	ids := map[string]bool{}
	if examplesHere {
		for _, ex := range res.Agent.Examples {
			ids[ex.ID] = true
		}
	}
	for _, d := range res.Diagnostics {
		if d.File != file {
			continue
		}
		switch d.Code {
		case CodeNoExamples:
			out = append(out, Fix{Title: "Add an Examples section to this file", Code: d.Code, Range: d.Range, Preferred: true,
				Edits: []Edit{appendEdit(s, "## Examples\n\n```yaml\n"+ExamplesSkeleton()+"```\n")}})
		case CodeDuplicateID:
			id := duplicateID(s, d.Range)
			if id == "" {
				continue
			}
			fresh := freshID(id, ids)
			ids[fresh] = true
			out = append(out, Fix{Title: "Rename this example to " + quote(fresh), Code: d.Code, Range: d.Range, Preferred: true,
				Edits: []Edit{{Range: d.Range, NewText: "id: " + fresh}}})
		}
	}
	for _, u := range res.Unfinished {
		if u.File != file {
			continue
		}
		switch u.Kind {
		case UnfinishedBlock:
			fence := fenceOf(s.text[u.Range.Start.Offset:])
			if fence == "" {
				continue
			}
			out = append(out, Fix{Title: "Close the Examples block", Code: CodeUnfinished, Range: u.Range, Preferred: true,
				Edits: []Edit{appendEdit(s, fence+"\n")}})
		case UnfinishedFrontmatter:
			out = append(out, Fix{Title: "Close the header with ---", Code: CodeUnfinished, Range: u.Range,
				Edits: []Edit{appendEdit(s, "---\n")}})
		}
	}
	if examplesHere {
		for _, ex := range res.Agent.Examples {
			if f, ok := addAssertFix(s, ex); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

// appendEdit adds text at the end of the file, on a line of its own after
// a blank line.
func appendEdit(s *source, text string) Edit {
	end := len(s.text)
	switch {
	case end == 0:
	case strings.HasSuffix(s.text, "\n\n"):
	case strings.HasSuffix(s.text, "\n"):
		if !strings.HasPrefix(text, "```") && !strings.HasPrefix(text, "~~~") && text != "---\n" {
			text = "\n" + text
		}
	default:
		if strings.HasPrefix(text, "```") || strings.HasPrefix(text, "~~~") || text == "---\n" {
			text = "\n" + text
		} else {
			text = "\n\n" + text
		}
	}
	p := s.pos(end)
	return Edit{Range: Range{Start: p, End: p}, NewText: text}
}

// duplicateID reads the id a KMX2008 diagnostic covers (its `id: VALUE`
// pair) back from the text.
func duplicateID(s *source, r Range) string {
	var pair map[string]string
	if err := yaml.Unmarshal([]byte(s.text[r.Start.Offset:r.End.Offset]), &pair); err != nil {
		return ""
	}
	return pair["id"]
}

func freshID(id string, taken map[string]bool) string {
	base := id
	if len(base) > 60 {
		base = base[:60]
	}
	for n := 2; ; n++ {
		c := fmt.Sprintf("%s-%d", base, n)
		if !taken[c] {
			return c
		}
	}
}

// fenceOf returns the fence characters that open the line at the start of
// text ("```" or a longer run, or tildes).
func fenceOf(text string) string {
	text = strings.TrimLeft(text, " ")
	if text == "" || text[0] != '`' && text[0] != '~' {
		return ""
	}
	n := len(text) - len(strings.TrimLeft(text, text[:1]))
	return text[:n]
}

var assertKey = regexp.MustCompile(`(?m)^[ \t-]*assert[ \t]*:`)

// addAssertFix offers an assertion for an example that has no assert key
// (without one, an example only checks that some answer came back).
func addAssertFix(s *source, ex Example) (Fix, bool) {
	item := s.text[ex.FullRange.Start.Offset:ex.FullRange.End.Offset]
	if ex.ID == "" || assertKey.MatchString(item) {
		return Fix{}, false
	}
	indent := strings.Repeat(" ", ex.Range.Start.Character+2)
	end := s.pos(ex.FullRange.End.Offset)
	return Fix{Title: "Add an assertion to " + quote(ex.ID), Range: ex.Range,
		Edits: []Edit{{Range: Range{Start: end, End: end}, NewText: "\n" + indent + "assert:\n" + indent + "  " + placeholderAssert}}}, true
}
