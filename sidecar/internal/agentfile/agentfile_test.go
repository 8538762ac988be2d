package agentfile

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/diagnostics/*.golden from the parser's output")

// repoFile reads a file relative to the module root.
func repoPath(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join("..", "..", "..", rel)
}

func readFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoPath(t, dir), "*.agent.md"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no agent files in %s (%v)", dir, err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = data
	}
	return out
}

func hasCode(r Result, code string) bool {
	for _, d := range r.Diagnostics {
		if d.Code == code {
			return true
		}
	}
	return false
}

func TestValidFilesAreValid(t *testing.T) {
	for name, src := range readFiles(t, "testdata/valid") {
		t.Run(name, func(t *testing.T) {
			r := Parse(name, src)
			if r.State != Valid || len(r.Unfinished) != 0 {
				t.Fatalf("State = %v, want valid\n%s", r.State, FormatDiagnostics(r.Diagnostics))
			}
			for _, d := range r.Diagnostics {
				if d.Severity == SeverityError {
					t.Errorf("unexpected error %s", FormatDiagnostics([]Diagnostic{d}))
				}
			}
			if len(r.Agent.Examples) == 0 {
				t.Error("no examples read")
			}
			for _, ex := range r.Agent.Examples {
				if ex.ID == "" {
					t.Errorf("example %+v has no id", ex)
				}
				for i, turn := range ex.Script() {
					if turn.Input == "" || len(turn.Assertions) == 0 {
						t.Errorf("example %s turn %d is missing input or assertions", ex.ID, i+1)
					}
					if got := string(src[turn.Range.Start.Offset : turn.Range.Start.Offset+1]); got != "-" {
						t.Errorf("example %s turn %d Range starts at %q, want the list dash", ex.ID, i+1, got)
					}
				}
				if got := string(src[ex.Range.Start.Offset : ex.Range.Start.Offset+1]); got != "-" {
					t.Errorf("example %s Range starts at %q, want the list dash", ex.ID, got)
				}
			}
		})
	}
}

// TestReleaseNotesFileReadsEveryField pins the decoded values of the richest
// valid file, so a field the parser stops filling fails here.
func TestReleaseNotesFileReadsEveryField(t *testing.T) {
	src := readFiles(t, "testdata/valid")["release-notes.agent.md"]
	a := Parse("dir/release-notes.agent.md", src).Agent
	if a.ID != "release-notes" || a.Model == nil || *a.Model != "fake" || !strings.HasPrefix(a.Description, "Drafts release notes") {
		t.Errorf("frontmatter read as ID=%q Model=%v Description=%q", a.ID, a.Model, a.Description)
	}
	if len(a.Tools) != 2 || a.Tools[0].Name != "github_list_merged_prs" || a.Tools[1].Name != "ping" {
		t.Errorf("Tools = %+v", a.Tools)
	}
	if !strings.HasPrefix(a.Instructions, "# Release notes agent") || !strings.HasSuffix(a.Instructions, "🚀 are fine.") {
		t.Errorf("Instructions = %q", a.Instructions)
	}
	if got := string(src[a.InstructionsRange.Start.Offset:a.InstructionsRange.End.Offset]); got != a.Instructions {
		t.Errorf("InstructionsRange covers %q", got)
	}
	if a.ExamplesHeading == nil || a.ExamplesHeading.Start.Line != 19 {
		t.Errorf("ExamplesHeading = %+v, want line 19 (zero-based)", a.ExamplesHeading)
	}
	if len(a.Examples) != 3 {
		t.Fatalf("%d examples, want 3", len(a.Examples))
	}
	weekly := a.Examples[0]
	wantTypes := []AssertionType{Contains, NotContains, Regex, LLMJudge}
	for i, as := range weekly.Assertions {
		if as.Type != wantTypes[i] || as.Index != i {
			t.Errorf("assertion %d = %s#%d, want %s", i, as.Type, as.Index, wantTypes[i])
		}
	}
	j := weekly.Assertions[3]
	if j.Operands().Rubric != "The answer starts with `Release notes:`" || j.Operands().JudgeModel != "fake" || j.Operands().Threshold == nil || *j.Operands().Threshold != 70 {
		t.Errorf("llmJudge = %+v", j)
	}
	if len(weekly.Tools) != 1 || !weekly.Tools[0].Pending {
		t.Errorf("weekly tools = %+v, want one pending recording", weekly.Tools)
	}
	monthly := a.Examples[1]
	if monthly.Input != "Draft notes for the month.\nInclude every merged pull request — même les petites.\n" {
		t.Errorf("monthly input = %q", monthly.Input)
	}
	rec := monthly.Tools[0]
	if rec.Pending || len(rec.Calls) != 1 {
		t.Fatalf("monthly recording = %+v", rec)
	}
	if rec.Calls[0].Arguments != `{"repository":"kmxdev/kmx","since":"2026-01-01"}` {
		t.Errorf("arguments JSON = %s", rec.Calls[0].Arguments)
	}
	if rec.Calls[0].Result != `{"prs":[{"number":12,"title":"Fix the parser ✓","merged":true},{"number":13,"title":null,"weight":1.5}]}` {
		t.Errorf("result JSON = %s", rec.Calls[0].Result)
	}
	if got := a.Examples[2].Input; got != "Quoted input with an escape: é and an emoji 🚀" {
		t.Errorf("quoted input = %q", got)
	}
	if len(a.Revision) != 64 {
		t.Errorf("Revision = %q", a.Revision)
	}
}

// TestEveryCodeIsDocumentedAndProduced holds the catalogue, the docs and
// the testdata to one list.
func TestEveryCodeIsDocumentedAndProduced(t *testing.T) {
	docs, err := os.ReadFile(repoPath(t, "docs/diagnostics.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := readFiles(t, "testdata/diagnostics")
	seen := map[string]bool{}
	for _, c := range Codes() {
		if seen[c.Code] {
			t.Errorf("code %s is listed twice", c.Code)
		}
		seen[c.Code] = true
		if !strings.Contains(string(docs), "## "+c.Code+" ") {
			t.Errorf("docs/diagnostics.md has no `## %s ...` entry", c.Code)
		}
		name := c.Code + ".agent.md"
		src, ok := files[name]
		if !ok {
			t.Errorf("testdata/diagnostics/%s is missing", name)
			continue
		}
		r := parseTestdata(t, c.Code, src, nil)
		found := false
		for _, d := range r.Diagnostics {
			if d.Code == c.Code {
				found = true
				if d.Severity != c.Severity {
					t.Errorf("%s reported as %v, catalogue says %v", c.Code, d.Severity, c.Severity)
				}
			}
			if d.Message == "" || d.Range.End.Offset < d.Range.Start.Offset {
				t.Errorf("%s: bad diagnostic %+v", name, d)
			}
		}
		if !found {
			t.Errorf("%s does not produce %s:\n%s", name, c.Code, FormatDiagnostics(r.Diagnostics))
		}
		checkGolden(t, c.Code, r)
	}
	for name := range files {
		if !seen[strings.TrimSuffix(name, ".agent.md")] {
			t.Errorf("testdata/diagnostics/%s names no catalogue code", name)
		}
	}
}

// fileNameFor is the name a diagnostics testdata file is parsed under: its
// own, except for the code that is about the file name itself.
func fileNameFor(code string) string {
	if code == CodeBadFileName {
		return "agents/C# Expert.agent.md"
	}
	return code + ".agent.md"
}

// parseTestdata parses testdata/diagnostics/CODE.agent.md, with its
// sibling CODE.agent.examples.yaml when there is one (extra is appended to
// the sibling).
func parseTestdata(t testing.TB, code string, src, extra []byte) Result {
	t.Helper()
	sib, err := os.ReadFile(repoPath(t, "testdata/diagnostics/"+code+ExamplesFileSuffix))
	if err != nil {
		return Parse(fileNameFor(code), src)
	}
	return ParsePair(fileNameFor(code), src, code+ExamplesFileSuffix, append(sib, extra...))
}

func checkGolden(t *testing.T, code string, r Result) {
	t.Helper()
	matchGolden(t, "testdata/diagnostics/"+code+".golden", "state: "+r.State.String()+"\n"+FormatDiagnostics(r.Diagnostics))
}

// matchGolden holds got to the golden file rel (relative to this package),
// or rewrites the file under -update.
func matchGolden(t *testing.T, rel, got string) {
	t.Helper()
	path := repoPath(t, rel)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update after checking):\n got:\n%s\nwant:\n%s", rel, got, want)
	}
}

// TestPrefixesOfValidFilesAreNeverInvalid is property 1: a file being typed
// from the top never shows an error that finishing it would remove.
func TestPrefixesOfValidFilesAreNeverInvalid(t *testing.T) {
	for name, src := range readFiles(t, "testdata/valid") {
		t.Run(name, func(t *testing.T) {
			for n := 0; n <= len(src); n++ {
				r := Parse(name, src[:n])
				if r.State == Invalid {
					t.Fatalf("prefix of %d bytes (ending %q) is invalid:\n%s", n, tail(src[:n]), FormatDiagnostics(r.Diagnostics))
				}
			}
		})
	}
}

func tail(b []byte) string {
	if len(b) > 40 {
		b = b[len(b)-40:]
	}
	return string(b)
}

// TestInvalidFilesStayInvalidWhenTextIsAppended is property 2: an error in
// a complete construct is never excused by what comes after it.
func TestInvalidFilesStayInvalidWhenTextIsAppended(t *testing.T) {
	suffixes := []string{
		"\n\n\n",
		"- id: more\n  input: another example\n",
		"```\n",
		"```yaml\n- id: z\n  input: q\n```\n",
		"## Examples\n",
		"---\n",
		"random text ~~~ ] } \" ' \t\n",
		"\x00\xff",
	}
	files := readFiles(t, "testdata/diagnostics")
	for _, c := range Codes() {
		if c.Severity != SeverityError {
			continue
		}
		src := files[c.Code+".agent.md"]
		for _, s := range suffixes {
			r := parseTestdata(t, c.Code, append(append([]byte{}, src...), s...), nil)
			if r.State != Invalid || !hasCode(r, c.Code) {
				t.Errorf("%s + %q: State %v, want invalid with %s:\n%s", c.Code, s, r.State, c.Code, FormatDiagnostics(r.Diagnostics))
			}
		}
	}
}

// TestParseIsAPureFunctionOfTheText is property 3. Parse takes only a name
// and bytes (no reader, clock or filesystem); the same bytes give a
// deep-equal Result, and the name changes only the default ID.
func TestParseIsAPureFunctionOfTheText(t *testing.T) {
	for _, dir := range []string{"testdata/valid", "testdata/diagnostics"} {
		for name, src := range readFiles(t, dir) {
			a, b := Parse(name, src), Parse(name, append([]byte{}, src...))
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: two parses of the same bytes differ", name)
			}
			c := Parse("other/"+name, src)
			c.Agent.ID = a.Agent.ID
			if !reflect.DeepEqual(a, c) {
				t.Errorf("%s: the path changed more than the default ID", name)
			}
		}
	}
}

func TestStateMatchesDiagnostics(t *testing.T) {
	for _, dir := range []string{"testdata/valid", "testdata/diagnostics"} {
		for name, src := range readFiles(t, dir) {
			checkStateConsistent(t, Parse(name, src))
		}
	}
}

func checkStateConsistent(t testing.TB, r Result) {
	t.Helper()
	errs, infos := 0, 0
	for _, d := range r.Diagnostics {
		if d.Severity == SeverityError {
			errs++
		}
		if d.Code == CodeUnfinished {
			infos++
		}
	}
	want := Valid
	switch {
	case errs > 0:
		want = Invalid
	case len(r.Unfinished) > 0:
		want = Unfinished
	}
	if r.State != want || infos != len(r.Unfinished) {
		t.Fatalf("State %v with %d errors, %d unfinished records and %d unfinished diagnostics", r.State, errs, len(r.Unfinished), infos)
	}
}

// TestConversationFileReadsEveryField pins the decoded values of the
// multi-turn, trajectory and budget assertions.
func TestConversationFileReadsEveryField(t *testing.T) {
	src := readFiles(t, "testdata/valid")["conversation.agent.md"]
	r := Parse("conversation.agent.md", src)
	if r.State != Valid {
		t.Fatalf("State = %v\n%s", r.State, FormatDiagnostics(r.Diagnostics))
	}
	ex := r.Agent.Examples[0]
	if !ex.MultiTurn() || ex.Input != "" || ex.Assertions != nil || len(ex.Turns) != 2 || len(ex.Tools) != 1 {
		t.Fatalf("follow-up = %+v", ex)
	}
	t1, t2 := ex.Turns[0], ex.Turns[1]
	if t1.Input != "What was merged this week?" || t2.Input != "And which of them fixed a bug?" {
		t.Errorf("inputs %q, %q", t1.Input, t2.Input)
	}
	if got := string(src[t2.Range.Start.Offset:t2.Range.End.Offset]); got != "- input: And which of them fixed a bug?" {
		t.Errorf("turn 2 range covers %q", got)
	}
	a := t1.Assertions
	if len(a) != 4 || a[0].Type != ToolCalledWith || a[0].Value != "github_list_merged_prs" || a[0].Operands().Arguments != "{}" {
		t.Fatalf("turn 1 assertions %+v", a)
	}
	if a[1].Type != NoOtherTools || strings.Join(a[1].Operands().Names, ",") != "github_list_merged_prs" {
		t.Errorf("noOtherTools lists %q", a[1].Operands().Names)
	}
	if a[2].Type != ToolCalls || a[2].Operands().Min == nil || *a[2].Operands().Min != 1 || a[2].Operands().Max == nil || *a[2].Operands().Max != 2 {
		t.Errorf("toolCalls %+v", a[2])
	}
	if a[3].Type != MaxLatencyMs || a[3].Operands().Limit != 60000 || t2.Assertions[2].Type != MaxTokens || t2.Assertions[2].Operands().Limit != 4000 {
		t.Errorf("budgets %+v %+v", a[3], t2.Assertions[2])
	}
	one := r.Agent.Examples[1]
	if one.MultiTurn() || len(one.Script()) != 1 || one.Script()[0].Input != one.Input || one.Script()[0].Range != one.Range {
		t.Errorf("one-turn example's script %+v", one.Script())
	}
	if o := one.Assertions[0]; o.Type != ToolOrder || strings.Join(o.Operands().Names, ",") != "github_list_merged_prs,ping" {
		t.Errorf("toolOrder %+v", o)
	}
}
