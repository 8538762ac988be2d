package workspace

import (
	"strings"
	"testing"
)

func TestDiffIsAUnifiedDiff(t *testing.T) {
	before := "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
	after := strings.Replace(before, "a - b", "a + b", 1)
	got := Diff(Change{Path: "calc/add.go", Kind: Modified, BeforeContent: []byte(before), Content: []byte(after)})
	want := "--- a/calc/add.go\n+++ b/calc/add.go\n@@ -2,5 +2,5 @@\n \n // Add returns a plus b.\n func Add(a, b int) int {\n-\treturn a - b\n+\treturn a + b\n }\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	got = Diff(Change{Path: "new.txt", Kind: Added, Content: []byte("one\ntwo")})
	want = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n\\ No newline at end of file\n"
	if got != want {
		t.Fatalf("added:\n%s", got)
	}
	got = Diff(Change{Path: "big.txt", Kind: Modified, Omitted: true, Hash: "sha256:b", BeforeOmitted: true, BeforeHash: "sha256:a"})
	if !strings.Contains(got, "kept by hash only; before sha256:a, after sha256:b") {
		t.Fatalf("omitted:\n%s", got)
	}
}

// Two changes far apart are two hunks; the numbers agree with the lines.
func TestDiffSplitsDistantChangesIntoHunks(t *testing.T) {
	var lines []string
	for i := 1; i <= 30; i++ {
		lines = append(lines, "line "+strings.Repeat("x", i%3)+string(rune('a'+i%26)))
	}
	before := strings.Join(lines, "\n") + "\n"
	lines[1], lines[27] = "changed 2", "changed 28"
	after := strings.Join(lines, "\n") + "\n"
	got := Diff(Change{Path: "f", Kind: Modified, BeforeContent: []byte(before), Content: []byte(after)})
	if strings.Count(got, "@@ ") != 2 || !strings.Contains(got, "@@ -1,5 +1,5 @@") || !strings.Contains(got, "@@ -25,6 +25,6 @@") {
		t.Fatalf("hunks:\n%s", got)
	}
}
