package agentfile

import (
	"strings"
	"testing"
)

const examplesHead = "Reply with exactly `ok`.\n\n## Examples\n\n"

func TestUnfinishedAndInvalidCases(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		state State
		// kinds are the unfinished constructs expected, in order.
		kinds []string
		// codes must each appear among the diagnostics.
		codes []string
	}{
		{"empty file", "", Valid, nil, []string{CodeNoExamples}},
		{"frontmatter opener being typed", "--", Unfinished, []string{UnfinishedFrontmatter}, nil},
		{"frontmatter without closer", "---\nname: x\nmodel: fa", Unfinished, []string{UnfinishedFrontmatter, UnfinishedFrontmatterEntry}, nil},
		{"frontmatter closer being typed", "---\nname: x\n--", Unfinished, []string{UnfinishedFrontmatter, UnfinishedFrontmatterEntry}, nil},
		{"complete frontmatter entry is still checked", "---\nmodel: {a: b}\nname: x", Invalid, []string{UnfinishedFrontmatter, UnfinishedFrontmatterEntry}, []string{CodeModelNotString}},
		{"frontmatter list under a key being typed", "---\ntools:\n- ping\n- pi", Unfinished, []string{UnfinishedFrontmatter, UnfinishedFrontmatterEntry}, nil},
		{"heading being typed", "Do it.\n\n## Exam", Unfinished, []string{UnfinishedHeading}, nil},
		{"lower-case heading is just a heading", "Do it.\n\n## examples\n", Valid, nil, []string{CodeNoExamples}},
		{"heading without block yet", examplesHead, Unfinished, []string{UnfinishedBlock}, nil},
		{"block opener being typed", examplesHead + "```ya", Unfinished, []string{UnfinishedBlockOpener}, nil},
		{"upper-case opener being typed", examplesHead + "```YAm", Unfinished, []string{UnfinishedBlockOpener}, nil},
		{"opener with a space being typed", examplesHead + "``` ", Unfinished, []string{UnfinishedBlockOpener}, nil},
		{"backtick line that may still become prose", examplesHead + "```yaml\n- id: a\n  input: b\n```\n```x", Unfinished, []string{UnfinishedBlockOpener}, nil},
		{"complete opener with another language", examplesHead + "```toml\n", Invalid, nil, []string{CodeExamplesNotYAML}},
		{"open block, nothing yet", examplesHead + "```yaml\n", Unfinished, []string{UnfinishedBlock}, nil},
		{"cut example's checks wait", examplesHead + "```yaml\n- id: a\n  input: x\n- id: a\n", Unfinished, []string{UnfinishedBlock, UnfinishedExample}, nil},
		{"complete example before the cut is checked", examplesHead + "```yaml\n- id: a\n- id: b\n", Invalid, []string{UnfinishedBlock, UnfinishedExample}, []string{CodeMissingInput}},
		{"the same example once the block closes", examplesHead + "```yaml\n- id: a\n  input: x\n- id: a\n```\n", Invalid, nil, []string{CodeDuplicateID, CodeMissingInput}},
		{"closing fence being typed", examplesHead + "```yaml\n- id: a\n  input: x\n``", Unfinished, []string{UnfinishedBlock, UnfinishedExample}, nil},
		{"open block that cannot become a list", examplesHead + "```yaml\nid: a\n", Invalid, []string{UnfinishedBlock}, []string{CodeExamplesNotList}},
		{"open flow list", examplesHead + "```yaml\n[{id: a, input: b}, {id: c", Unfinished, []string{UnfinishedBlock, UnfinishedExample}, nil},
		{"quoted string cut by the end", examplesHead + "```yaml\n- id: a\n  input: \"unterminated", Unfinished, []string{UnfinishedBlock, UnfinishedExample}, nil},
		{"YAML error in a complete example", examplesHead + "```yaml\n- id: a\n  input: x: y\n- id: b\n  input: y\n", Invalid, []string{UnfinishedBlock, UnfinishedExample}, []string{CodeYAMLSyntax}},
		{"an open bracket continues to the end", examplesHead + "```yaml\n- id: a\n  input: [x\n- id: b\n  input: y\n", Unfinished, []string{UnfinishedBlock, UnfinishedExample}, nil},
		{"a quoted scalar may continue at column 0", "---\ndescription: \"two\nlines\"\nmodel: fa", Unfinished, []string{UnfinishedFrontmatter, UnfinishedFrontmatterEntry}, nil},
		{"a tag line belongs to the mapping after it", "---\n!!map\nname: x\nmodel: fa", Unfinished, []string{UnfinishedFrontmatter, UnfinishedFrontmatterEntry}, nil},
		{"a tagged list being typed", examplesHead + "```yaml\n!!seq\n- id: a\n", Unfinished, []string{UnfinishedBlock, UnfinishedExample}, nil},
		{"leading blank lines are not instructions", "\n\n  \nDo it.\n\n", Valid, nil, []string{CodeNoExamples}},
		{"a second YAML document", examplesHead + "```yaml\n- id: a\n  input: b\n---\n- id: c\n  input: d\n```\n", Invalid, nil, []string{CodeYAMLSyntax}},
		{"a document marker before the list", examplesHead + "```yaml\n---\n- id: a\n  input: b\n```\n", Valid, nil, nil},
		{"empty closed block", examplesHead + "```yaml\n# nothing\n```\n", Invalid, nil, []string{CodeExamplesNotList}},
		{"repeated key in recorded arguments", "---\ntools: [t]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  tools:\n    t:\n      recorded:\n        calls:\n          - arguments: {q: 1, q: 2}\n            result: ok\n```\n", Invalid, nil, []string{CodeRepeatedKey}},
		{"NaN has no JSON form", "---\ntools: [t]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  tools:\n    t:\n      recorded:\n        calls:\n          - arguments: .nan\n            result: ok\n```\n", Invalid, nil, []string{CodeMalformedRecording}},
		{"threshold not an integer", examplesHead + "```yaml\n- id: a\n  input: b\n  assert:\n    - llmJudge: {rubric: r, threshold: 7.5}\n```\n", Invalid, nil, []string{CodeBadThreshold}},
		{"assert is not a list", examplesHead + "```yaml\n- id: a\n  input: b\n  assert: {contains: x}\n```\n", Invalid, nil, []string{CodeMalformedAssertion}},
		{"empty contains operand", examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [contains: '']\n```\n", Invalid, nil, []string{CodeMalformedAssertion}},
		{"unknown llmJudge key", examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [llmJudge: {rubric: r, model: m}]\n```\n", Invalid, nil, []string{CodeMalformedAssertion}},
		{"tool assertion without any declaration", examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolNotCalled: t]\n```\n", Invalid, nil, []string{CodeAssertUndeclared}},
		{"fence in instructions hides a heading", "```\n## Examples\n```\n", Valid, nil, []string{CodeNoExamples}},
		{"unknown frontmatter key is only a warning", "---\nx-color: red\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n```\n", Valid, nil, []string{CodeUnknownFrontmatter}},
		{"CRLF line ends", strings.ReplaceAll("---\nmodel: fake\n---\n"+examplesHead+"```yaml\n- id: a\n  input: b\n```\n", "\n", "\r\n"), Valid, nil, nil},
		{"turns instead of input", examplesHead + "```yaml\n- id: a\n  turns:\n    - input: b\n      assert: [contains: x]\n    - input: c\n```\n", Valid, nil, nil},
		{"a turn being typed waits", examplesHead + "```yaml\n- id: a\n  turns:\n    - input: b\n    - inp", Unfinished, []string{UnfinishedBlock, UnfinishedExample}, nil},
		{"turns key being typed waits", examplesHead + "```yaml\n- id: a\n  tur", Unfinished, []string{UnfinishedBlock, UnfinishedExample}, nil},
		{"a complete multi-turn example before the cut is checked", examplesHead + "```yaml\n- id: a\n  turns:\n    - assert: [contains: x]\n- id: b\n", Invalid, []string{UnfinishedBlock, UnfinishedExample}, []string{CodeMissingInput}},
		{"empty turns", examplesHead + "```yaml\n- id: a\n  turns: []\n```\n", Invalid, nil, []string{CodeMalformedTurns}},
		{"turns not a list", examplesHead + "```yaml\n- id: a\n  turns: {input: b}\n```\n", Invalid, nil, []string{CodeMalformedTurns}},
		{"a turn that is not a mapping", examplesHead + "```yaml\n- id: a\n  turns: [hello]\n```\n", Invalid, nil, []string{CodeMalformedTurns}},
		{"tools inside a turn", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  turns:\n    - input: b\n      tools: {}\n```\n", Invalid, nil, []string{CodeMalformedTurns}},
		{"assert beside turns", examplesHead + "```yaml\n- id: a\n  turns: [{input: b}]\n  assert: [contains: x]\n```\n", Invalid, nil, []string{CodeTurnsWithInput}},
		{"too many turns", examplesHead + "```yaml\n- id: a\n  turns:\n" + strings.Repeat("    - input: b\n", MaxTurns+1) + "```\n", Invalid, nil, []string{CodeMalformedTurns}},
		{"a turn's input over 16 KiB", examplesHead + "```yaml\n- id: a\n  turns:\n    - input: " + strings.Repeat("x", MaxInputBytes+1) + "\n```\n", Invalid, nil, []string{CodeInputTooLarge}},
		{"a bad assertion in a turn", examplesHead + "```yaml\n- id: a\n  turns:\n    - input: b\n      assert: [equals: x]\n```\n", Invalid, nil, []string{CodeUnknownAssertion}},
		{"every trajectory and budget assertion", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert:\n    - toolCalledWith: {name: t, arguments: {q: [1, {r: s}]}}\n    - toolOrder: [t, u, t]\n    - toolCalls: {min: 0, max: 5}\n    - noOtherTools: true\n    - maxLatencyMs: 1000\n    - maxTokens: 1\n```\n", Valid, nil, nil},
		{"toolCalledWith without arguments", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolCalledWith: {name: t}]\n```\n", Invalid, nil, []string{CodeMalformedAssertion}},
		{"toolCalledWith with list arguments", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolCalledWith: {name: t, arguments: [1]}]\n```\n", Invalid, nil, []string{CodeMalformedAssertion}},
		{"toolCalledWith of an undeclared tool", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolCalledWith: {name: v, arguments: {}}]\n```\n", Invalid, nil, []string{CodeAssertUndeclared}},
		{"toolOrder of one name", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolOrder: [t]]\n```\n", Invalid, nil, []string{CodeMalformedAssertion}},
		{"toolOrder with an undeclared name", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolOrder: [t, v]]\n```\n", Invalid, nil, []string{CodeAssertUndeclared}},
		{"toolCalls min above max", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolCalls: {min: 3, max: 2}]\n```\n", Invalid, nil, []string{CodeMalformedAssertion}},
		{"toolCalls with no bound", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolCalls: {}]\n```\n", Invalid, nil, []string{CodeMalformedAssertion}},
		{"toolCalls negative", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolCalls: {max: -1}]\n```\n", Invalid, nil, []string{CodeMalformedAssertion}},
		{"noOtherTools false", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolCalled: t, noOtherTools: false]\n```\n", Invalid, nil, []string{CodeMalformedAssertion}},
		{"noOtherTools with nothing listed", "---\ntools: [t, u]\n---\n" + examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [toolNotCalled: t, noOtherTools: true]\n```\n", Invalid, nil, []string{CodeNothingListed}},
		{"trajectory assertion in a file with no tools", examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [noOtherTools: true]\n```\n", Invalid, nil, []string{CodeNoToolsDeclared}},
		{"budget not an integer", examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [maxTokens: 1.5]\n```\n", Invalid, nil, []string{CodeBadBudget}},
		{"budgets need no tools", examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [maxTokens: 10, maxLatencyMs: 10]\n```\n", Valid, nil, nil},
		{"prose after the block is ignored", examplesHead + "```yaml\n- id: a\n  input: b\n```\nNotes for people.\n", Valid, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Parse("t.agent.md", []byte(tt.src))
			checkStateConsistent(t, r)
			if r.State != tt.state {
				t.Errorf("State = %v, want %v\n%s", r.State, tt.state, FormatDiagnostics(r.Diagnostics))
			}
			var kinds []string
			for _, u := range r.Unfinished {
				kinds = append(kinds, u.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tt.kinds, ",") {
				t.Errorf("unfinished = %q, want %q", kinds, tt.kinds)
			}
			for _, c := range tt.codes {
				if !hasCode(r, c) {
					t.Errorf("no %s among\n%s", c, FormatDiagnostics(r.Diagnostics))
				}
			}
		})
	}
}

func TestCRLFFileReadsLikeLF(t *testing.T) {
	lf := readFiles(t, "testdata/valid")["release-notes.agent.md"]
	crlf := strings.ReplaceAll(string(lf), "\n", "\r\n")
	a, b := Parse("a", lf).Agent, Parse("a", []byte(crlf)).Agent
	if len(a.Examples) != len(b.Examples) || a.Examples[1].Input != b.Examples[1].Input {
		t.Fatalf("CRLF examples differ: %d vs %d", len(a.Examples), len(b.Examples))
	}
	for i := range a.Examples {
		if a.Examples[i].Range.Start.Line != b.Examples[i].Range.Start.Line || a.Examples[i].Range.End.Character != b.Examples[i].Range.End.Character {
			t.Errorf("example %d range %+v vs %+v", i, a.Examples[i].Range, b.Examples[i].Range)
		}
	}
}

// TestCredentialsAreRefusedWithoutEchoingThem builds every token at run
// time so no literal in the repository is credential-shaped.
func TestCredentialsAreRefusedWithoutEchoingThem(t *testing.T) {
	ghp := "gh" + "p_" + strings.Repeat("Zx9", 12)
	esc := `\x67` + ghp[1:]
	tests := []struct {
		name, src string
		line      int // 1-based line of the finding
	}{
		{"in a YAML comment", examplesHead + "```yaml\n- id: a # " + ghp + "\n  input: b\n```\n", 6},
		{"in instructions", "Use Bearer " + strings.Repeat("ab12", 6) + " to call.\n", 1},
		{"as a frontmatter key", "---\n" + ghp + ": x\n---\n", 2},
		{"escaped in a double-quoted input", examplesHead + "```yaml\n- id: a\n  input: \"" + esc + "\"\n```\n", 7},
		{"escaped in a frontmatter value", "---\ndescription: \"" + esc + "\"\n---\n", 2},
		{"in an unfinished example", examplesHead + "```yaml\n- id: a\n  input: " + ghp, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Parse("t.agent.md", []byte(tt.src))
			if r.State != Invalid {
				t.Errorf("State = %v, want invalid", r.State)
			}
			found := 0
			for _, d := range r.Diagnostics {
				if strings.Contains(d.Message, ghp) || strings.Contains(d.Message, "ab12ab12") || strings.Contains(d.Message, esc) {
					t.Errorf("message echoes the credential: %s", d.Message)
				}
				if d.Code == CodeCredential {
					found++
					if d.Range.Start.Line+1 != tt.line {
						t.Errorf("credential reported on line %d, want %d", d.Range.Start.Line+1, tt.line)
					}
				}
			}
			if found != 1 {
				t.Errorf("%d credential diagnostics, want 1:\n%s", found, FormatDiagnostics(r.Diagnostics))
			}
		})
	}
}

// TestCredentialMessageSaidAAPI (issue 31 item 13): the refusal of an sk-
// key read "a API secret key (sk-) is in the file"; a shape name starting
// with a vowel takes "an".
func TestCredentialMessageSaidAAPI(t *testing.T) {
	sk := "s" + "k-" + strings.Repeat("a1B2", 8)
	aws := "AK" + "IA" + strings.Repeat("Q7", 8)
	for _, c := range []struct{ src, want string }{
		{"Use " + sk + " to call.\n", "an API secret key (sk-) is in the file"},
		{"Use " + aws + " to call.\n", "an AWS access key ID is in the file"},
		{"Use gh" + "p_" + strings.Repeat("Zx9", 12) + " to call.\n", "a GitHub token is in the file"},
	} {
		r := Parse("t.agent.md", []byte(c.src))
		if got := FormatDiagnostics(r.Diagnostics); !strings.Contains(got, c.want) {
			t.Errorf("want %q in:\n%s", c.want, got)
		}
	}
}

// TestRangesAreExact pins the exact span of a few diagnostics.
func TestRangesAreExact(t *testing.T) {
	tests := []struct {
		name, src, code, covers string
	}{
		{"invalid regex points at the pattern", examplesHead + "```yaml\n- id: a\n  input: b\n  assert:\n    - regex: '(ok'\n```\n", CodeBadRegex, "'(ok'"},
		{"unknown assertion names the type", examplesHead + "```yaml\n- id: a\n  input: b\n  assert:\n    - equals: x\n```\n", CodeUnknownAssertion, "equals"},
		{"repeated key points at the repeat", "---\nmodel: a\nmodel: b\n---\n", CodeRepeatedKey, "model"},
		{"bad tool reference", "---\ntools: [ok, \" b a d\"]\n---\n", CodeBadToolName, `" b a d"`},
		{"input too large covers the entry", examplesHead + "```yaml\n- id: a\n  input: " + strings.Repeat("x", MaxInputBytes+1) + "\n```\n", CodeInputTooLarge, "input: " + strings.Repeat("x", MaxInputBytes+1)},
		{"unicode before the value", examplesHead + "```yaml\n- id: a\n  input: b\n  assert: [{contains: ünï🚀}, {regex: \"(ok\"}]\n```\n", CodeBadRegex, `"(ok"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Parse("t.agent.md", []byte(tt.src))
			for _, d := range r.Diagnostics {
				if d.Code != tt.code {
					continue
				}
				if got := tt.src[d.Range.Start.Offset:d.Range.End.Offset]; got != tt.covers {
					t.Errorf("range covers %q, want %q", got, tt.covers)
				}
				return
			}
			t.Fatalf("no %s:\n%s", tt.code, FormatDiagnostics(r.Diagnostics))
		})
	}
}

func TestPositionsCountUTF16(t *testing.T) {
	src := "---\ntools: [\U0001F680ok, \"b a d \"]\n---\n"
	r := Parse("t.agent.md", []byte(src))
	for _, d := range r.Diagnostics {
		if d.Code == CodeBadToolName && strings.Contains(d.Message, "b a d") {
			// "tools: [" is 8 units, the rocket 2, "ok, " 4.
			if d.Range.Start.Character != 14 {
				t.Errorf("Character = %d, want 14 UTF-16 units", d.Range.Start.Character)
			}
			return
		}
	}
	t.Fatalf("no bad tool name diagnostic:\n%s", FormatDiagnostics(r.Diagnostics))
}

func TestCodesCatalogueIsACopy(t *testing.T) {
	a := Codes()
	a[0].Code = "changed"
	if Codes()[0].Code == "changed" {
		t.Fatal("Codes returns shared state")
	}
}
