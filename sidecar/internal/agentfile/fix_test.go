package agentfile

import (
	"sort"
	"strings"
	"testing"
)

// apply applies a fix's edits (non-overlapping) to src.
func apply(src string, f Fix) string {
	edits := append([]Edit{}, f.Edits...)
	sort.Slice(edits, func(i, j int) bool { return edits[i].Range.Start.Offset > edits[j].Range.Start.Offset })
	for _, e := range edits {
		src = src[:e.Range.Start.Offset] + e.NewText + src[e.Range.End.Offset:]
	}
	return src
}

func fixTitled(t *testing.T, src, title string) Fix {
	t.Helper()
	r := Parse("f.agent.md", []byte(src))
	var titles []string
	for _, f := range Fixes([]byte(src), r) {
		if strings.HasPrefix(f.Title, title) {
			return f
		}
		titles = append(titles, f.Title)
	}
	t.Fatalf("no fix %q among %q for:\n%s", title, titles, src)
	return Fix{}
}

// TestFixesResolveTheirDiagnostic applies each fix and checks that the
// diagnostic it names is gone and nothing new is wrong.
func TestFixesResolveTheirDiagnostic(t *testing.T) {
	dup := examplesHead + "```yaml\n- id: a\n  input: x\n  assert: [contains: x]\n- id: a\n  input: y\n  assert: [contains: y]\n- id: a-2\n  input: z\n  assert: [contains: z]\n```\n"
	tests := []struct {
		name, src, title string
		wantAfter        State
		contains         string
	}{
		{"no examples, file ends with a newline", "---\nname: C# Expert\n---\nYou review C#.\n", "Add an Examples section", Valid, "\n\n## Examples\n\n```yaml\n# Each example"},
		{"no examples, no final newline", "You review C#.", "Add an Examples section", Valid, "You review C#.\n\n## Examples"},
		{"empty file", "", "Add an Examples section", Valid, "## Examples"},
		{"duplicate id", dup, "Rename this example to `a-3`", Valid, "- id: a-3\n  input: y"},
		{"unclosed block", examplesHead + "```yaml\n- id: a\n  input: x\n  assert: [contains: x]\n", "Close the Examples block", Valid, "[contains: x]\n```\n"},
		{"unclosed long fence, no newline", examplesHead + "````yaml\n- id: a\n  input: x\n  assert: [contains: x]", "Close the Examples block", Valid, "[contains: x]\n````\n"},
		{"unclosed header", "---\nname: x\ndescription: y\n", "Close the header", Valid, "description: y\n---\n"},
		{"example without assert", examplesHead + "```yaml\n- id: a\n  input: x\n- id: b\n  input: y\n  assert: [contains: y]\n```\n", "Add an assertion to `a`", Valid, "  input: x\n  assert:\n    - contains: Replace"},
		{"indented list without assert", examplesHead + "```yaml\n  - id: a\n    input: x\n```\n", "Add an assertion to `a`", Valid, "    input: x\n    assert:\n      - contains: Replace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fixTitled(t, tt.src, tt.title)
			after := apply(tt.src, f)
			if !strings.Contains(after, tt.contains) {
				t.Errorf("after the fix the text does not contain %q:\n%s", tt.contains, after)
			}
			r := Parse("f.agent.md", []byte(after))
			if r.State != tt.wantAfter || (f.Code != "" && f.Code != CodeUnfinished && hasCode(r, f.Code)) {
				t.Errorf("after %q: state %v, want %v, and no %s:\n%s\n%s", f.Title, r.State, tt.wantAfter, f.Code, after, FormatDiagnostics(r.Diagnostics))
			}
			for _, d := range r.Diagnostics {
				if d.Severity == SeverityError {
					t.Errorf("the fix introduced %s %s", d.Code, d.Message)
				}
			}
		})
	}
}

// TestAddExamplesSkeletonRuns: the skeleton parses to one runnable example
// with one assertion, so the editor can run it right after the fix.
func TestAddExamplesSkeletonRuns(t *testing.T) {
	src := "---\nname: Reviewer\ntools: ['edit/editFiles']\n---\nReview.\n"
	after := apply(src, fixTitled(t, src, "Add an Examples section"))
	r := Parse("reviewer.agent.md", []byte(after))
	if r.State != Valid || len(r.Agent.Examples) != 1 || len(r.Agent.Examples[0].Assertions) != 1 {
		t.Fatalf("state %v, %d examples:\n%s", r.State, len(r.Agent.Examples), FormatDiagnostics(r.Diagnostics))
	}
	if r.Agent.Instructions != "Review." {
		t.Errorf("instructions changed: %q", r.Agent.Instructions)
	}
	if strings.Contains(r.Agent.Examples[0].Input, "#") {
		t.Errorf("the skeleton's comment reached the input: %q", r.Agent.Examples[0].Input)
	}
}

func TestNoFixesForAFinishedFile(t *testing.T) {
	for name, src := range readFiles(t, "testdata/valid") {
		r := Parse(name, src)
		for _, f := range Fixes(src, r) {
			if f.Code != "" {
				t.Errorf("%s: a valid file is offered %q for %s", name, f.Title, f.Code)
			}
		}
	}
}

func TestFixesInTheExamplesFile(t *testing.T) {
	a, _ := readPair(t)
	e := "- id: a\n  input: x\n- id: a\n  input: y\n  assert: [contains: y]\n- id: b\n  input: z\n  assert: [contains: z]\n"
	r := parsePair(a, []byte(e))
	if len(FixesIn("", a, r)) != 0 {
		t.Errorf("the agent file is offered fixes that belong to the examples file: %+v", FixesIn("", a, r))
	}
	var titles []string
	for _, f := range FixesIn("reviewer"+ExamplesFileSuffix, []byte(e), r) {
		titles = append(titles, f.Title)
		after := apply(e, f)
		if f.Code == CodeDuplicateID && parsePair(a, []byte(after)).State != Valid {
			t.Errorf("renaming the duplicate does not make the pair valid:\n%s", after)
		}
	}
	if strings.Join(titles, "|") != "Rename this example to `a-2`|Add an assertion to `a`" {
		t.Errorf("fixes = %q", titles)
	}
}
