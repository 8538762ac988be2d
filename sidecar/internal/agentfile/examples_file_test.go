package agentfile

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"testing"
)

func readPair(t *testing.T) (agent, examples []byte) {
	t.Helper()
	a, err := os.ReadFile(repoPath(t, "testdata/pair/reviewer.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := os.ReadFile(repoPath(t, "testdata/pair/reviewer"+ExamplesFileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return a, e
}

// parsePair reads the examples text as an editor buffer being typed
// (ParsePairTyping): the prefix and refusal properties below are about
// text that may still be cut; savedPair reads it as a saved file.
func parsePair(a, e []byte) Result {
	return ParsePairTyping("pair/reviewer.agent.md", a, "pair/reviewer"+ExamplesFileSuffix, e)
}

func savedPair(a, e []byte) Result {
	return ParsePair("pair/reviewer.agent.md", a, "pair/reviewer"+ExamplesFileSuffix, e)
}

// Issue 31 item 18: a mis-indented last example in a saved examples file
// was "still being written" at 1:1, an Information, and kmx test refused
// the file as unfinished. A saved examples file is complete: YAML that does
// not parse is an Error on the line where it stops parsing, from the
// column its text starts in. The same text being typed stays unfinished.
func TestASavedExamplesFileWithAMisIndentedLastExampleIsAnErrorWhereItIs(t *testing.T) {
	a, _ := readPair(t)
	tests := []struct {
		name, src string
		line, col int
	}{
		// yaml.v3 names line 4 ("did not find expected '-' indicator").
		{"the last item indented one space", "- id: one\n  input: hi\n  assert:\n    - contains: hello\n - id: two\n   input: hey\n", 5, 2},
		{"a key of the last example indented too far", "- id: one\n  input: hi\n- id: two\n  input: hey\n   assert:\n    - contains: hello\n", 5, 4},
		{"a key of the last example indented too little", "- id: one\n  input: hi\n- id: two\n  input: hey\n assert:\n    - contains: hello\n", 5, 2},
		{"a comment and a blank line before it", "# examples\n\n- id: one\n  input: hi\n\n - id: two\n   input: hey\n", 6, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := savedPair(a, []byte(tt.src))
			if r.State != Invalid {
				t.Fatalf("saved: state %v, want invalid:\n%s", r.State, FormatDiagnostics(r.Diagnostics))
			}
			var found *Diagnostic
			for i, d := range r.Diagnostics {
				if d.Code == CodeUnfinished {
					t.Errorf("saved: still being written: %+v", d)
				}
				if d.Code == CodeYAMLSyntax {
					found = &r.Diagnostics[i]
				}
			}
			if found == nil || found.Severity != SeverityError || found.File != "reviewer"+ExamplesFileSuffix ||
				found.Range.Start.Line+1 != tt.line || found.Range.Start.Character+1 != tt.col {
				t.Fatalf("saved: want an Error KMX1001 at %d:%d in the examples file:\n%s", tt.line, tt.col, FormatDiagnostics(r.Diagnostics))
			}
			if typed := parsePair(a, []byte(tt.src)); typed.State != Unfinished {
				t.Errorf("being typed: state %v, want unfinished:\n%s", typed.State, FormatDiagnostics(typed.Diagnostics))
			}
		})
	}
}

func TestPairIsValidAndSendsTheWholeBody(t *testing.T) {
	a, e := readPair(t)
	r := parsePair(a, e)
	if r.State != Valid {
		t.Fatalf("state %v:\n%s", r.State, FormatDiagnostics(r.Diagnostics))
	}
	ag := r.Agent
	if ag.ID != "reviewer" || ag.DisplayName() != "Code Reviewer" || ag.ExamplesFile != "reviewer"+ExamplesFileSuffix {
		t.Errorf("ID %q, name %q, examples file %q", ag.ID, ag.DisplayName(), ag.ExamplesFile)
	}
	// The instructions are the body byte for byte: everything after the
	// header's closing line, trailing newline and fenced block included.
	body := a[bytes.Index(a, []byte("\n---\n"))+len("\n---\n"):]
	if ag.Instructions != string(body) {
		t.Errorf("instructions are not the agent body byte for byte:\n got %q\nwant %q", ag.Instructions, body)
	}
	if len(ag.Examples) != 2 || ag.Examples[0].ID != "short" || ag.Examples[1].Tools[0].Tool != "search/codebase" {
		t.Fatalf("examples = %+v", ag.Examples)
	}
	// Ranges are positions in the examples file.
	if got := ag.Examples[0].Range.Start.Line; got != 1 {
		t.Errorf("first example on line %d of the examples file, want 1", got)
	}
	if ag.Revision != PairRevision(a, e) || ag.Revision == Parse("reviewer.agent.md", a).Agent.Revision {
		t.Errorf("revision %s does not cover both files", ag.Revision)
	}
}

// TestPairRevisionCoversBothFiles: a change to either file changes the
// revision.
func TestPairRevisionCoversBothFiles(t *testing.T) {
	a, e := readPair(t)
	base := parsePair(a, e).Agent.Revision
	seen := map[string]bool{base: true}
	for i := range a {
		b := append([]byte{}, a...)
		b[i] ^= 0x20
		if rev := parsePair(b, e).Agent.Revision; rev == base {
			t.Fatalf("flipping agent byte %d left the revision unchanged", i)
		}
	}
	for i := range e {
		b := append([]byte{}, e...)
		b[i] ^= 0x20
		rev := parsePair(a, b).Agent.Revision
		if seen[rev] {
			t.Fatalf("flipping examples byte %d gave a revision already seen", i)
		}
		seen[rev] = true
	}
	// Moving bytes from one file to the other is a different pair.
	if PairRevision(append(append([]byte{}, a...), 'x'), e) == PairRevision(a, append([]byte{'x'}, e...)) {
		t.Error("moving a byte between the files kept the revision")
	}
}

// TestPrefixesOfAnExamplesFileReadAsAClosedBlock is property 1 for the
// sibling file. An examples file is a whole YAML document, so it needs no
// closing fence: every prefix of a valid examples file that parses as YAML
// reads exactly as the same list above a closing fence would (same state,
// same error codes), and a prefix whose YAML is cut at the end, or that
// holds no example yet, is still being written, never invalid.
func TestPrefixesOfAnExamplesFileReadAsAClosedBlock(t *testing.T) {
	a, e := readPair(t)
	files := [][]byte{e, []byte("- id: a\n  input: \"quoted: x\"\n  assert: [{contains: x}, {llmJudge: {rubric: \"Says `x`\", threshold: 70}}]\n- id: b\n  input: |\n    two\n    lines\n"), []byte("- id: c\n  turns:\n    - input: first\n      assert:\n        - contains: x\n        - maxLatencyMs: 500\n    - input: \"second: y\"\n      assert: [{maxTokens: 10}, {regex: '^T'}]\n- id: d\n  input: z\n")}
	cut, closed := 0, 0
	for _, src := range files {
		if r := parsePair(a, src); r.State != Valid {
			t.Fatalf("the whole file is %v:\n%s", r.State, FormatDiagnostics(r.Diagnostics))
		}
		for n := 0; n < len(src); n++ {
			prefix := src[:n]
			r := parsePair(a, prefix)
			checkStateConsistent(t, r)
			if _, err := decodeYAML(string(prefix)); err != nil || noItems(prefix) {
				cut++
				if r.State == Invalid {
					t.Fatalf("prefix of %d bytes (ending %q) is cut inside YAML but invalid:\n%s", n, tail(prefix), FormatDiagnostics(r.Diagnostics))
				}
				continue
			}
			closed++
			block := string(prefix)
			if !strings.HasSuffix(block, "\n") {
				block += "\n"
			}
			single := Parse("pair/reviewer.agent.md", []byte(string(a)+"\n## Examples\n\n```yaml\n"+block+"```\n"))
			if r.State != single.State || fmt.Sprint(errorCodes(r)) != fmt.Sprint(errorCodes(single)) {
				t.Fatalf("prefix of %d bytes (ending %q): examples file %v %v, closed block %v %v:\n%s\n--\n%s", n, tail(prefix),
					r.State, errorCodes(r), single.State, errorCodes(single), FormatDiagnostics(r.Diagnostics), FormatDiagnostics(single.Diagnostics))
			}
		}
	}
	if cut == 0 || closed == 0 {
		t.Fatalf("the prefixes exercised %d cut and %d closed readings; want both", cut, closed)
	}
}

func errorCodes(r Result) []string {
	var out []string
	for _, d := range r.Diagnostics {
		if d.Severity == SeverityError {
			out = append(out, d.Code)
		}
	}
	sort.Strings(out)
	return out
}

func TestExamplesFileRefusals(t *testing.T) {
	a, _ := readPair(t)
	tests := []struct {
		name, src, code string
		state           State
	}{
		{"not a list", "id: a\ninput: b\n", CodeExamplesNotList, Invalid},
		{"unknown key in an earlier example", "- id: a\n  input: b\n  bogus: 1\n- id: c\n  input: d\n", CodeUnknownExampleKey, Invalid},
		{"duplicate id", "- id: a\n  input: b\n- id: a\n  input: c\n- id: d\n  input: e\n", CodeDuplicateID, Invalid},
		{"undeclared tool recording", "- id: a\n  input: b\n  tools:\n    edit/editFiles:\n      recorded: {calls: []}\n- id: c\n  input: d\n", CodeRecordingUndecl, Invalid},
		{"credential in a comment", "# " + "gh" + "p_" + strings.Repeat("A1b2", 9) + "\n- id: a\n  input: b\n", CodeCredential, Invalid},
		{"empty file", "", CodeUnfinished, Unfinished},
		{"last example without input", "- id: a\n  input: b\n- id: c\n", CodeMissingInput, Invalid},
		{"unknown key in the last example", "- id: a\n  input: b\n  bogus: 1\n", CodeUnknownExampleKey, Invalid},
		{"last example cut inside a quote", "- id: a\n  input: b\n- id: c\n  input: \"unfin", CodeUnfinished, Unfinished},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parsePair(a, []byte(tt.src))
			if r.State != tt.state || !hasCode(r, tt.code) {
				t.Fatalf("state %v, want %v with %s:\n%s", r.State, tt.state, tt.code, FormatDiagnostics(r.Diagnostics))
			}
			for _, d := range r.Diagnostics {
				if d.Code == tt.code && d.File != "reviewer"+ExamplesFileSuffix {
					t.Errorf("%s is not placed in the examples file: %+v", d.Code, d)
				}
			}
		})
	}
	// A last example cut inside its YAML is still being written, and says
	// what the whole reading found so far.
	r := parsePair(a, []byte("- id: a\n  input: b\n- id: c\n  input: [x"))
	if r.State != Unfinished || !strings.Contains(FormatDiagnostics(r.Diagnostics), "still being written: this example is checked once its YAML is complete; as it stands: YAML does not parse") {
		t.Errorf("state %v:\n%s", r.State, FormatDiagnostics(r.Diagnostics))
	}
}

func TestPairPaths(t *testing.T) {
	if got := SiblingExamplesPath("/w/x/reviewer.agent.md"); got != "/w/x/reviewer.agent.examples.yaml" {
		t.Errorf("SiblingExamplesPath = %q", got)
	}
	if got := AgentPathOf(`C:\w\reviewer.agent.examples.yaml`); got != `C:\w\reviewer.agent.md` {
		t.Errorf("AgentPathOf = %q", got)
	}
	for _, p := range []string{"/w/.agent.examples.yaml", "/w/x.md", "/w/x.agent.examples.yml"} {
		if AgentPathOf(p) != "" {
			t.Errorf("AgentPathOf(%q) = %q, want none", p, AgentPathOf(p))
		}
	}
	if SiblingExamplesPath("/w/.agent.md") != "" || SiblingExamplesPath("/w/x.md") != "" {
		t.Error("SiblingExamplesPath accepted a non-agent file")
	}
}

func TestParseFileResolvesThePairFromEitherFile(t *testing.T) {
	a, e := readPair(t)
	files := map[string][]byte{"/w/reviewer.agent.md": a, "/w/reviewer" + ExamplesFileSuffix: e, "/w/solo.agent.md": a}
	read := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	want := ParsePair("/w/reviewer.agent.md", a, "/w/reviewer"+ExamplesFileSuffix, e)
	for _, p := range []string{"/w/reviewer.agent.md", "/w/reviewer" + ExamplesFileSuffix} {
		r, agentPath, err := ParseFile(p, files[p], read)
		if err != nil || agentPath != "/w/reviewer.agent.md" || r.Agent.Revision != want.Agent.Revision || len(r.Agent.Examples) != 2 {
			t.Errorf("ParseFile(%s) = %v, %q, %v", p, r.State, agentPath, err)
		}
	}
	r, _, err := ParseFile("/w/solo.agent.md", a, read)
	if err != nil || r.Agent.ExamplesFile != "" || !hasCode(r, CodeNoExamples) {
		t.Errorf("a file without a sibling is not read alone: %v %v", err, r.Agent.ExamplesFile)
	}
	if _, _, err := ParseFile("/w/orphan"+ExamplesFileSuffix, e, read); err == nil || !strings.Contains(err.Error(), "orphan.agent.md, which does not exist") {
		t.Errorf("an examples file without its agent: %v", err)
	}
}
