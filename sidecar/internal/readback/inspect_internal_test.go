package readback

import (
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// A changed file over the journal's bound has no content to diff: the
// panel gets its hashes and a note saying why, never a diff of nothing.
func TestFileChangeOverTheBoundIsShownByHash(t *testing.T) {
	c := fileChange(workspace.Change{Path: "big.txt", Kind: workspace.Modified, Size: 70000, Hash: "sha256:after", Omitted: true,
		BeforeSize: 10, BeforeHash: "sha256:before", BeforeContent: []byte("small\n")})
	if !c.HashOnly || c.Diff != "" || c.Hash != "sha256:after" || c.BeforeHash != "sha256:before" || !strings.Contains(c.Note, "kept by hash only") || !strings.Contains(c.Note, "64 KiB") {
		t.Errorf("change %+v", c)
	}
	bin := fileChange(workspace.Change{Path: "a.bin", Kind: workspace.Added, Size: 2, Hash: "sha256:x", Content: []byte{0xff, 0xfe}})
	if bin.Diff != "" || !strings.Contains(bin.Note, "not text") {
		t.Errorf("binary change %+v", bin)
	}
	added := fileChange(workspace.Change{Path: "new.go", Kind: workspace.Added, Size: 6, Hash: "sha256:n", Content: []byte("a\nb\n")})
	if added.Diff != "@@ -0,0 +1,2 @@\n+a\n+b\n" || added.Note != "" {
		t.Errorf("added %+v", added)
	}
}

func TestSplitTurnName(t *testing.T) {
	for name, want := range map[string]struct {
		id string
		n  int
	}{
		"talks/turn:2": {"talks", 2}, "plain": {"plain", 0}, "x/turn:0": {"x/turn:0", 0}, "x/turn:02": {"x/turn:02", 0}, "x/turn:y": {"x/turn:y", 0},
	} {
		if id, n := splitTurnName(name); id != want.id || n != want.n {
			t.Errorf("splitTurnName(%q) = %q, %d", name, id, n)
		}
	}
}
