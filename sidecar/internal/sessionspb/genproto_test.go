package sessionspb_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestGeneratedCodeIsCurrent regenerates the Sessions contract into a
// temporary folder with the same script `make proto` uses and requires the
// committed sessionspb to match byte for byte, so an edited .proto can never
// ship with stale Go. This test file is the folder's only hand-written file
// and is left out of the comparison.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	root := testutil.ModuleRoot(t)
	t.Setenv("PATH", filepath.Join(root, ".tools", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	var missing []string
	for _, tool := range []string{"protoc", "protoc-gen-go", "protoc-gen-go-grpc", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		msg := "cannot check generated code: missing " + strings.Join(missing, ", ") + " (run `make tools`)"
		if os.Getenv("CI") == "" {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}

	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "genproto.sh"), out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/genproto.sh: %v\n%s", err, b)
	}
	committed := filepath.Join(root, "sidecar", "internal", "sessionspb")
	want, got := goFiles(t, out), goFiles(t, committed)
	if strings.Join(want, ",") != strings.Join(got, ",") {
		t.Fatalf("sessionspb holds %v, generation gives %v: run `make proto`", got, want)
	}
	for _, name := range want {
		fresh, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		old, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, old) {
			t.Errorf("sessionspb/%s is stale: run `make proto` and commit the result", name)
		}
	}
}

func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}
