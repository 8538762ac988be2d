package agentfile

import (
	"regexp"
	"strings"
	"testing"
)

// regexCheckSeeds are patterns of every kind regexp.Compile answers: valid
// ones, each syntax error code, the size and nesting limits, bad UTF-8.
var regexCheckSeeds = []string{
	"", "number 7\\b", "(?i)answer:", "a{2,5}", "[[:alpha:]]+", "\\pL", "(?P<n>x)",
	"(", ")", "[", "[z-a]", "a**", "a{1001}", "x{2}{3}{4}{5}{6}", "\\8", "\\pX",
	"(?P<n>x)(?P<n>y)", "(?<", "[[:nope:]]", "\xff", "a{2,1}", "*", "(?z)",
	strings.Repeat("(", 1001) + strings.Repeat(")", 1001),
	"((((((((((a{100}){100}){100}){100})))))))", strings.Repeat("a{1000}", 200),
}

// TestRegexCheckMatchesRegexpCompile holds the parser's regex check (a
// syntax.Parse) to regexp.Compile: the same patterns refused, with the same
// error, so no pattern the parser accepts can fail in the judge.
func TestRegexCheckMatchesRegexpCompile(t *testing.T) {
	for _, pattern := range regexCheckSeeds {
		checkRegexAgainstCompile(t, pattern)
	}
}

func FuzzRegexCheck(f *testing.F) {
	for _, s := range regexCheckSeeds {
		f.Add(s)
	}
	f.Fuzz(checkRegexAgainstCompile)
}

func checkRegexAgainstCompile(t *testing.T, pattern string) {
	var p parser
	got := p.compileRegex(pattern)
	_, want := regexp.Compile(pattern)
	if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
		t.Fatalf("pattern %q: parser check says %v, regexp.Compile says %v", pattern, got, want)
	}
	if again := p.compileRegex(pattern); again != got {
		t.Fatalf("pattern %q: second check %v, first %v", pattern, again, got)
	}
}
