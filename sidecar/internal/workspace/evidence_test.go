package workspace_test

import (
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// TestEvidence: each failed file assertion's two sides, bounded, and none
// when they cannot be shown (content not kept, credential-shaped text).
func TestEvidence(t *testing.T) {
	o := workspace.Outcome{
		Changes: []workspace.Change{
			{Path: "a.go", Kind: workspace.Modified, Content: []byte("a + b\n"), BeforeContent: []byte("a - b\n")},
			{Path: "new.txt", Kind: workspace.Added, Content: []byte("hi\n")},
			{Path: "old.txt", Kind: workspace.Deleted, BeforeContent: []byte("bye\n")},
			{Path: "big.bin", Kind: workspace.Modified, Omitted: true, BeforeContent: []byte("x")},
		},
		Files: []workspace.FileState{
			{Path: "a.go", Exists: true, Content: []byte("a + b\n")},
			{Path: "gone.go"},
			{Path: "big.go", Exists: true, Omitted: true, Size: 1 << 20},
			{Path: "long.txt", Exists: true, Content: []byte(strings.Repeat("é", workspace.MaxEvidenceBytes))},
			{Path: "cred.txt", Exists: true, Content: []byte("token " + "gh" + "p_" + strings.Repeat("Zq7", 12) + "\n")},
		},
	}
	cases := []struct {
		name, kind, path, operand string
		paths                     []string
		expected, actual          string
		ok                        bool
	}{
		{"fileContains: the text against the content", workspace.FileContains, "a.go", "b + a", nil, "b + a", "a + b\n", true},
		{"fileNotContains: the content without the text", workspace.FileNotContains, "a.go", "+ b", nil, "a \n", "a + b\n", true},
		{"fileMatches: the pattern against the content", workspace.FileMatches, "a.go", `b \* a`, nil, `b \* a`, "a + b\n", true},
		{"fileContains on a file the turn left absent", workspace.FileContains, "gone.go", "x", nil, "x", "(gone.go does not exist after the turn)", true},
		{"fileUnchanged: the fixture's bytes against the final ones", workspace.FileUnchanged, "a.go", "", nil, "a - b\n", "a + b\n", true},
		{"fileUnchanged on an added file", workspace.FileUnchanged, "new.txt", "", nil, "(new.txt did not exist)", "hi\n", true},
		{"fileUnchanged on a deleted file", workspace.FileUnchanged, "old.txt", "", nil, "bye\n", "(old.txt was deleted)", true},
		{"filesChanged: the paths, one a line, sorted", workspace.FilesChanged, "", "", []string{"z.go", "a.go"}, "a.go\nz.go\n", "a.go\nnew.txt\nold.txt\nbig.bin\n", true},
		{"content kept by hash only is not shown", workspace.FileContains, "big.go", "x", nil, "", "", false},
		{"a change kept by hash only is not shown", workspace.FileUnchanged, "big.bin", "", nil, "", "", false},
		{"credential-shaped content is never shown", workspace.FileContains, "cred.txt", "x", nil, "", "", false},
		{"a path with no recorded state", workspace.FileContains, "other.go", "x", nil, "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, a, ok := workspace.Evidence(c.kind, c.path, c.operand, c.paths, o)
			if ok != c.ok || e != c.expected || a != c.actual {
				t.Fatalf("Evidence = %q, %q, %v; want %q, %q, %v", e, a, ok, c.expected, c.actual, c.ok)
			}
		})
	}
	t.Run("each side is bounded on a rune boundary, with a note", func(t *testing.T) {
		_, a, ok := workspace.Evidence(workspace.FileContains, "long.txt", "x", nil, o)
		head, note, found := strings.Cut(a, "\n… (")
		if !ok || !found || len(head) > workspace.MaxEvidenceBytes || !strings.HasSuffix(note, " more bytes not shown)") || strings.ContainsRune(head, '\uFFFD') {
			t.Fatalf("bounded side: %v %d bytes, note %q", ok, len(head), note)
		}
	})
}
