package agentfile

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// benchFile generates an agent file of about 1 MiB with n examples that use
// every construct: block and quoted inputs, all assertion types, comments
// and a tool recording.
func benchFile(n int) []byte {
	var b strings.Builder
	b.WriteString("---\nname: bench\ndescription: A generated agent.\nmodel: fake\ntools: [github_list_merged_prs, ping]\n---\n")
	b.WriteString("You draft release notes.\nReply with exactly `Release notes:` followed by the input\n\n## Examples\n\n```yaml\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `- id: example-%d   # generated
  input: |
    Draft release notes for week %d of the project, covering every merged pull request.
    Keep it short, group the changes by area, and credit each author by handle: résumé ✓.
  assert:
    - contains: "Release notes:"
    - notContains: TODO
    - regex: "^Release notes: [A-Za-z]+"
    - llmJudge:
        rubric: The answer starts with `+"`Release notes:`"+` and lists changes by area
        threshold: 70
    - toolCalled: github_list_merged_prs
  tools:
    github_list_merged_prs:
      recorded:
        calls:
          - arguments: {repository: kmxdev/kmx, week: %d}
            result: {prs: [{number: %d, title: "Fix the parser"}]}
`, i, i, i, i)
	}
	b.WriteString("```\n")
	return []byte(b.String())
}

func BenchmarkParse1MiB(b *testing.B) {
	src := benchFile(2000)
	r := Parse("bench.agent.md", src)
	if r.State != Valid || len(r.Agent.Examples) != 2000 {
		b.Fatalf("generated file is %v with %d examples:\n%s", r.State, len(r.Agent.Examples), FormatDiagnostics(r.Diagnostics))
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Parse("bench.agent.md", src)
	}
}

// BenchmarkYAMLOnly1MiB is the floor under BenchmarkParse1MiB: yaml.v3
// alone decoding the same Examples block into nodes.
func BenchmarkYAMLOnly1MiB(b *testing.B) {
	src := benchFile(2000)
	start := strings.Index(string(src), "```yaml\n") + len("```yaml\n")
	block := src[start : len(src)-len("```\n")]
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		var n yaml.Node
		if err := yaml.Unmarshal(block, &n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParserEdit1MiB is the editor's case: a Parser that has seen the
// file parses it again after one example's input changed (a different
// example each time, alternating between two spellings so the text stays
// the same size). One op is a whole Parser.Parse of the edited 1 MiB text.
func BenchmarkParserEdit1MiB(b *testing.B) {
	src := benchFile(2000)
	const word = "Draft release notes for week "
	var edits []int
	for from := 0; len(edits) < 2000; {
		i := bytes.Index(src[from:], []byte(word))
		if i < 0 {
			b.Fatalf("only %d example inputs in the generated file", len(edits))
		}
		edits = append(edits, from+i)
		from += i + len(word)
	}
	var ps Parser
	if r := ps.Parse("bench.agent.md", src); r.State != Valid || len(r.Agent.Examples) != 2000 {
		b.Fatalf("generated file is %v with %d examples", r.State, len(r.Agent.Examples))
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		at := edits[n%len(edits)]
		src[at] ^= 'D' ^ 'd' // "Draft" <-> "draft"
		n++
		if r := ps.Parse("bench.agent.md", src); len(r.Agent.Examples) != 2000 {
			b.Fatalf("%d examples after an edit", len(r.Agent.Examples))
		}
	}
}
