//go:build unix

package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// TestKilledWorkspaceRunLeavesNoPassAndNoFixture kills the real kmx test
// binary with SIGKILL at random points of a run whose examples each edit a
// scratch copy of a fixture. After each kill: a run that did not finish
// holds no result (so no pass), its journal still verifies, and any copy
// left behind is private and under the state folder. Afterwards the
// fixture is byte for byte what it was, and an uncut run reads it, not a
// leftover copy: it passes every example with the fixture's own hash, and
// removes every copy the killed runs left.
func TestKilledWorkspaceRunLeavesNoPassAndNoFixture(t *testing.T) {
	bin := kmxBinary(t)
	h := home(t)
	src := filepath.Join("..", "..", "..", "testdata", "demo")
	dir := t.TempDir()
	for _, rel := range []string{"fixtures/calc/README.md", "fixtures/calc/calc/add.go", "fixtures/calc/calc/add_test.go"} {
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	b.WriteString("---\nname: fix-many\nmodel: fake\ntools: ['read/readFile', 'edit/editFiles']\n---\nReplace `return a - b` with `return a + b` in `calc/add.go`\n\n## Examples\n\n```yaml\n- workspace: fixtures/calc\n")
	for i := range 40 {
		fmt.Fprintf(&b, "- id: fix%02d\n  input: fix %d\n  assert:\n    - fileContains: {path: calc/add.go, text: \"return a + b\"}\n    - filesChanged: [calc/add.go]\n", i, i)
	}
	b.WriteString("```\n")
	file := filepath.Join(dir, "fix-many.agent.md")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	fx, err := workspace.Load(dir, "fixtures/calc")
	if err != nil {
		t.Fatal(err)
	}
	jdir, err := journal.EnsureDir(h)
	if err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	if out, err := kmxCmd(bin, h, "test", file).CombinedOutput(); err != nil {
		t.Fatalf("uncut run: %v\n%s", err, out)
	}
	span := max(time.Since(began), 100*time.Millisecond)
	rng := rand.New(rand.NewPCG(uint64(began.UnixNano()), 1))
	ctx := context.Background()
	for i := range 8 {
		before := runIDs(t, jdir)
		cmd := kmxCmd(bin, h, "test", file, "--concurrency", fmt.Sprint(1+i%4))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(span))))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		for id := range runIDs(t, jdir) {
			if before[id] {
				continue
			}
			if _, err := os.Lstat(filepath.Join(jdir, id+".db")); err != nil {
				continue // killed before its database existed
			}
			j, err := journal.Open(ctx, jdir, id)
			if err != nil {
				t.Fatalf("kill %d: run %s does not open: %v", i, id, err)
			}
			if err := j.Verify(ctx); err != nil {
				t.Fatalf("kill %d: run %s: %v", i, id, err)
			}
			recs, err := j.Records(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if j.Status() != journal.StatusFinished {
				for _, r := range recs {
					if r.Kind == journal.KindRunResult {
						t.Fatalf("kill %d: unfinished run %s holds a result", i, id)
					}
				}
			}
			for _, r := range recs {
				if r.Kind != journal.KindSessionPlaced {
					continue
				}
				var p journal.SessionPlaced
				if err := journal.Decode(r.Payload, &p); err != nil || p.Workspace == nil || p.Workspace.Hash != fx.Hash {
					t.Fatalf("kill %d: a session was placed on %+v, not the fixture %s (%v)", i, p.Workspace, fx.Hash, err)
				}
			}
			j.Close()
		}
		left, err := os.ReadDir(filepath.Join(h, "local-preview", "workspaces"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range left {
			fi, err := os.Lstat(filepath.Join(h, "local-preview", "workspaces", e.Name()))
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Fatalf("kill %d: leftover %s: %v %v", i, e.Name(), fi.Mode(), err)
			}
		}
	}
	after, err := workspace.Load(dir, "fixtures/calc")
	if err != nil || after.Hash != fx.Hash {
		t.Fatalf("the fixture changed: %v", err)
	}
	out, err := kmxCmd(bin, h, "test", file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "40 examples: 40 pass, 0 fail, 0 unknown") {
		t.Fatalf("uncut run after the kills: %v\n%s", err, out)
	}
	// Its start removed the copies the killed runs left (none of them is
	// executing), and its end its own folder: nothing is left (issue 27).
	left, err := os.ReadDir(filepath.Join(h, "local-preview", "workspaces"))
	if err != nil || len(left) != 0 {
		t.Fatalf("scratch left after the uncut run: %v (%v)", left, err)
	}
}
