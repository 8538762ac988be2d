//go:build unix

package state_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"

	"github.com/kmxdev/kmx/sidecar/internal/state"
)

func tempRoot(t *testing.T) string {
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestEnsurePrivateDirCreatesPrivate(t *testing.T) {
	testutil.Umask0(t)
	base := tempRoot(t)
	// The parents of the root (here "user/.config") are the user's: created
	// if missing, never judged, so a 0755 one is fine.
	cfg := filepath.Join(base, "user", ".config")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(cfg, "kmx")
	got, err := state.EnsurePrivateDir(root, "local-preview", "journals")
	if err != nil {
		t.Fatalf("EnsurePrivateDir: %v", err)
	}
	if want := filepath.Join(root, "local-preview", "journals"); got != want {
		t.Fatalf("EnsurePrivateDir = %q, want %q", got, want)
	}
	for _, p := range []string{root, filepath.Join(root, "local-preview"), got} {
		if m := testutil.Mode(t, p); m != 0o700 {
			t.Errorf("%s has mode %04o, want 0700", p, m)
		}
	}
	// Idempotent: a second call accepts what the first made.
	if _, err := state.EnsurePrivateDir(root, "local-preview", "journals"); err != nil {
		t.Fatalf("second EnsurePrivateDir: %v", err)
	}
	// Missing parents are created too.
	deep := filepath.Join(base, "a", "b", "kmx")
	if _, err := state.EnsurePrivateDir(deep); err != nil {
		t.Fatalf("EnsurePrivateDir with missing parents: %v", err)
	}
}

func TestEnsurePrivateDirRefusesUnsafe(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, root string) // root does not exist yet
		sub     []string
		bad     string // path named in the refusal, relative to root
		problem string
		fix     string
	}{
		{"root 0755", func(t *testing.T, root string) { mkdir(t, root, 0o755) }, nil, ".", "mode 0755", "chmod 700 "},
		{"root 0750", func(t *testing.T, root string) { mkdir(t, root, 0o750) }, nil, ".", "mode 0750", "chmod 700 "},
		{"sub 0777", func(t *testing.T, root string) {
			mkdir(t, root, 0o700)
			mkdir(t, filepath.Join(root, "local-preview"), 0o777)
		}, []string{"local-preview", "journals"}, "local-preview", "mode 0777", "chmod 700 "},
		{"root is a symlink", func(t *testing.T, root string) {
			real := root + "-real"
			mkdir(t, real, 0o700)
			if err := os.Symlink(real, root); err != nil {
				t.Fatal(err)
			}
		}, nil, ".", "symbolic link", "KMX_HOME"},
		{"sub is a symlink", func(t *testing.T, root string) {
			mkdir(t, root, 0o700)
			mkdir(t, root+"-elsewhere", 0o700)
			if err := os.Symlink(root+"-elsewhere", filepath.Join(root, "local-preview")); err != nil {
				t.Fatal(err)
			}
		}, []string{"local-preview"}, "local-preview", "symbolic link", "KMX_HOME"},
		{"sub is a file", func(t *testing.T, root string) {
			mkdir(t, root, 0o700)
			if err := os.WriteFile(filepath.Join(root, "local-preview"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"local-preview"}, "local-preview", "not a directory", "KMX_HOME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(tempRoot(t), "kmx")
			tt.setup(t, root)
			_, err := state.EnsurePrivateDir(root, tt.sub...)
			var ue *state.UnsafeError
			if !errors.As(err, &ue) {
				t.Fatalf("EnsurePrivateDir = %v, want *UnsafeError", err)
			}
			wantPath := filepath.Join(root, tt.bad)
			if ue.Path != wantPath || !strings.Contains(ue.Problem, tt.problem) || !strings.Contains(ue.Fix, tt.fix) {
				t.Fatalf("refusal = %+v, want path %s, problem %q, fix %q", ue, wantPath, tt.problem, tt.fix)
			}
			if !strings.Contains(err.Error(), wantPath) {
				t.Fatalf("message %q does not name the path", err)
			}
			// Refused, never repaired.
			if fi, err := os.Lstat(wantPath); err == nil && fi.Mode()&fs.ModeSymlink == 0 && fi.IsDir() {
				if m := fi.Mode().Perm(); m == 0o700 {
					t.Fatalf("%s was repaired to 0700", wantPath)
				}
			}
		})
	}
}

func TestRefusesForeignOwner(t *testing.T) {
	p := "/" // owned by root: foreign unless the tests run as root
	if os.Getuid() == 0 {
		p = filepath.Join(tempRoot(t), "foreign")
		mkdir(t, p, 0o700)
		if err := os.Chown(p, 12345, 12345); err != nil {
			t.Fatal(err)
		}
	}
	err := state.CheckPrivateDir(p)
	var ue *state.UnsafeError
	if !errors.As(err, &ue) || !strings.Contains(ue.Problem, "owned by uid") {
		t.Fatalf("CheckPrivateDir(%s) = %v, want a refusal about its owner", p, err)
	}
}

func TestEnsurePrivateDirBadArguments(t *testing.T) {
	tests := []struct {
		name string
		root string
		sub  []string
	}{
		{"relative root", "state", nil},
		{"dot-dot sub", "/tmp/x", []string{".."}},
		{"nested sub", "/tmp/x", []string{"a/b"}},
		{"empty sub", "/tmp/x", []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := state.EnsurePrivateDir(tt.root, tt.sub...); err == nil {
				t.Fatal("EnsurePrivateDir accepted it")
			}
		})
	}
}

func TestPrivateFiles(t *testing.T) {
	testutil.Umask0(t)
	dir := tempRoot(t)
	p := filepath.Join(dir, "run.db")
	f, err := state.CreatePrivateFile(p)
	if err != nil {
		t.Fatalf("CreatePrivateFile: %v", err)
	}
	_ = f.Close()
	if m := testutil.Mode(t, p); m != 0o600 {
		t.Fatalf("created file has mode %04o, want 0600", m)
	}
	if err := state.CheckPrivateFile(p); err != nil {
		t.Fatalf("CheckPrivateFile of a fresh file: %v", err)
	}
	if _, err := state.CreatePrivateFile(p); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreatePrivateFile over an existing file = %v, want ErrExist", err)
	}

	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := state.CreatePrivateFile(link); err == nil {
		t.Fatal("CreatePrivateFile followed a pre-placed symlink")
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("CreatePrivateFile created the symlink's target")
	}

	tests := []struct {
		name    string
		setup   func() string
		problem string
	}{
		{"0644 file", func() string { return write(t, dir, "broad.db", 0o644) }, "mode 0644"},
		{"0640 file", func() string { return write(t, dir, "group.db", 0o640) }, "mode 0640"},
		{"symlink", func() string { return link }, "symbolic link"},
		{"directory", func() string { d := filepath.Join(dir, "d.db"); mkdir(t, d, 0o700); return d }, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ue *state.UnsafeError
			if err := state.CheckPrivateFile(tt.setup()); !errors.As(err, &ue) || !strings.Contains(ue.Problem, tt.problem) {
				t.Fatalf("CheckPrivateFile = %v, want a refusal about %q", err, tt.problem)
			}
		})
	}
	if err := state.CheckPrivateFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CheckPrivateFile(missing) = %v, want ErrNotExist", err)
	}
}

func mkdir(t *testing.T, p string, m fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(p, m); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, name string, m fs.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, nil, m); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadOnlyPrivateIsReadable: a user who makes the state folder
// read-only (chmod 0500 folders, 0400 files) keeps it private, so a reader
// accepts it; a writer refuses it as read-only with the step that makes it
// writable, not as unsafe. Group or other access is refused by both.
func TestReadOnlyPrivateIsReadable(t *testing.T) {
	base := tempRoot(t)
	for _, tt := range []struct {
		mode             fs.FileMode
		readable, strict string // "" accepted, else a word of the refusal
	}{
		{0o700, "", ""},
		{0o500, "", "read-only (mode 0500)"},
		{0o550, "mode 0550", "mode 0550"},
		{0o505, "mode 0505", "mode 0505"},
		{0o750, "mode 0750", "mode 0750"},
		{0o300, "mode 0300", "mode 0300"},
		{0o600, "mode 0600", "mode 0600"},
	} {
		p := filepath.Join(base, fmt.Sprintf("dir%04o", tt.mode))
		mkdir(t, p, tt.mode)
		checkRefusal(t, "CheckReadableDir", p, state.CheckReadableDir(p), tt.readable)
		checkRefusal(t, "CheckPrivateDir", p, state.CheckPrivateDir(p), tt.strict)
		if tt.mode != 0o700 {
			_, err := state.EnsurePrivateDir(p)
			checkRefusal(t, "EnsurePrivateDir", p, err, tt.strict)
		}
	}
	for _, tt := range []struct {
		mode             fs.FileMode
		readable, strict string
	}{
		{0o600, "", ""},
		{0o400, "", "read-only (mode 0400)"},
		{0o440, "mode 0440", "mode 0440"},
		{0o404, "mode 0404", "mode 0404"},
		{0o200, "mode 0200", "mode 0200"},
	} {
		p := write(t, base, fmt.Sprintf("file%04o", tt.mode), tt.mode)
		checkRefusal(t, "CheckReadableFile", p, state.CheckReadableFile(p), tt.readable)
		checkRefusal(t, "CheckPrivateFile", p, state.CheckPrivateFile(p), tt.strict)
	}
	if err := state.CheckPrivateDir(filepath.Join(base, "dir0500")); !strings.Contains(err.(*state.UnsafeError).Fix, "chmod -R u+w "+filepath.Join(base, "dir0500")) {
		t.Errorf("a read-only folder's step does not make it writable: %v", err)
	}
}

func checkRefusal(t *testing.T, what, p string, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("%s(%s) = %v, want it accepted", what, filepath.Base(p), err)
		}
		return
	}
	var ue *state.UnsafeError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) || ue.Path != p {
		t.Errorf("%s(%s) = %v, want a refusal of %s saying %q", what, filepath.Base(p), err, p, want)
	}
}
