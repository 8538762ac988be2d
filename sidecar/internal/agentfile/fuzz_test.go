package agentfile

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks that Parse never panics, that State always agrees with
// the diagnostics, that every range lies inside the text, and that a few
// prefixes of a valid text are never invalid (property 1 on fuzzed input).
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata/valid", "testdata/diagnostics"} {
		paths, _ := filepath.Glob(filepath.Join(repoPath(f, dir), "*.agent.md"))
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil && len(data) < 8<<10 {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		r := Parse("fuzz.agent.md", src)
		checkStateConsistent(t, r)
		checkRanges(t, src, r)
		if !reflect.DeepEqual(r, Parse("fuzz.agent.md", src)) {
			t.Fatal("two parses of the same bytes differ")
		}
		if r.State != Valid {
			return
		}
		for _, n := range []int{len(src) - 1, len(src) * 3 / 4, len(src) / 2} {
			if n < 0 {
				continue
			}
			if p := Parse("fuzz.agent.md", src[:n]); p.State == Invalid {
				t.Fatalf("valid text has an invalid prefix of %d bytes:\n%s", n, FormatDiagnostics(p.Diagnostics))
			}
		}
	})
}

func checkRanges(t *testing.T, src []byte, r Result) {
	t.Helper()
	check := func(what string, rg Range) {
		if rg.Start.Offset < 0 || rg.End.Offset > len(src) || rg.Start.Offset > rg.End.Offset {
			t.Fatalf("%s range %+v outside the %d-byte text", what, rg, len(src))
		}
		if rg.Start.Line > rg.End.Line {
			t.Fatalf("%s range %+v ends before it starts", what, rg)
		}
	}
	for _, d := range r.Diagnostics {
		check(d.Code, d.Range)
		if d.Message == "" {
			t.Fatalf("%s has no message", d.Code)
		}
		if !utf8.ValidString(d.Message) && utf8.Valid(src) {
			t.Fatalf("%s message is not UTF-8: %q", d.Code, d.Message)
		}
	}
	for _, u := range r.Unfinished {
		check(u.Kind, u.Range)
	}
	check("instructions", r.Agent.InstructionsRange)
	for i, ex := range r.Agent.Examples {
		check(fmt.Sprintf("example %d", i), ex.Range)
		check(fmt.Sprintf("example %d full", i), ex.FullRange)
		for j, turn := range ex.Script() {
			check(fmt.Sprintf("example %d turn %d", i, j), turn.Range)
			for _, a := range turn.Assertions {
				check(string(a.Type), a.Range)
			}
		}
	}
	if strings.Count(r.Agent.Revision, "") != 65 {
		t.Fatalf("revision %q", r.Agent.Revision)
	}
}
