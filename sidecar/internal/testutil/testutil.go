// Package testutil holds the helpers tests across kmx share: the module
// root, a private state folder, and the real kmx binary built once per test
// process. It is imported only by _test.go files and owns no behaviour of
// the product.
package testutil

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// ModuleRoot is the repository root, where go.mod is.
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("testutil: cannot locate the module root")
	}
	root := filepath.Join(filepath.Dir(here), "..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		tb.Fatalf("testutil: no go.mod at %s: %v", root, err)
	}
	return root
}

// PrivateDir returns a fresh folder with mode 0700, as kmx requires of its
// state folder (t.TempDir's parent may be broader).
func PrivateDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "kmx")
	if err := os.Mkdir(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// kmxBuild is the binary built for this test process. A test binary is one
// process, so one build serves every test in it.
var kmxBuild struct {
	once sync.Once
	path string
	err  error
}

// KMX builds the real kmx binary once per test process and returns its path.
func KMX(tb testing.TB) string {
	tb.Helper()
	root := ModuleRoot(tb)
	kmxBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "kmx-bin-")
		if err != nil {
			kmxBuild.err = err
			return
		}
		kmxBuild.path = filepath.Join(dir, "kmx")
		// No budget of its own: go test's -timeout bounds the process.
		cmd := exec.Command("go", "build", "-o", kmxBuild.path, "./sidecar/cmd/kmx")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			kmxBuild.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if kmxBuild.err != nil {
		tb.Fatalf("build kmx: %v", kmxBuild.err)
	}
	return kmxBuild.path
}

// DirNames lists the entry names of dir, sorted as os.ReadDir returns them.
func DirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// Mode returns the permission bits of p itself (a symbolic link is not
// followed), failing the test when p cannot be read.
func Mode(tb testing.TB, p string) fs.FileMode {
	tb.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Mode().Perm()
}
