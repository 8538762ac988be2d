//go:build unix

package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// nobody is the unprivileged user a root test process hands the state
// folder to: root ignores file modes, so only another user meets them.
const nobody = 65534

// readOnlyKmx is the real kmx binary run as the owner of a state folder
// the user made read-only (chmod 0500 on each folder, 0400 on each file).
type readOnlyKmx struct {
	bin, home, dir string
	cred           *syscall.Credential // nil: the current user
}

// readOnlyFolder makes the state folder h read-only as a user would and
// returns how to run kmx there. As root (which ignores modes) the folder,
// a copy of the binary and dir are handed to the unprivileged user nobody
// and kmx runs as nobody; otherwise kmx runs as the current user. Either
// way the modes are what stop a write, so the test runs everywhere and
// never skips. The folder is made writable again when the test ends, so
// it can be removed.
func readOnlyFolder(t *testing.T, h, dir string) readOnlyKmx {
	t.Helper()
	k := readOnlyKmx{bin: kmxBinary(t), home: h, dir: dir}
	if os.Getuid() == 0 {
		bin := filepath.Join(dir, "kmx-bin")
		data, err := os.ReadFile(k.bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		k.bin = bin
		k.cred = &syscall.Credential{Uid: nobody, Gid: nobody}
		for _, p := range []string{dir, h} {
			if err := filepath.WalkDir(p, func(p string, _ fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, nobody, nobody)
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	setModes := func(dirMode, fileMode fs.FileMode) error {
		var dirs []string
		err := filepath.WalkDir(h, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir():
				dirs = append(dirs, p)
				return nil
			}
			return os.Chmod(p, fileMode)
		})
		// Folders last, deepest first, so the walk can still read them.
		for i := len(dirs) - 1; i >= 0 && err == nil; i-- {
			err = os.Chmod(dirs[i], dirMode)
		}
		return err
	}
	t.Cleanup(func() {
		_ = filepath.WalkDir(h, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	if err := setModes(0o500, 0o400); err != nil {
		t.Fatal(err)
	}
	return k
}

// run runs kmx ARGS in dir with KMX_HOME set to the state folder.
func (k readOnlyKmx) run(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(k.bin, args...)
	cmd.Dir = k.dir
	cmd.Env = []string{"KMX_HOME=" + k.home, "HOME=" + k.dir, "PATH=/usr/bin:/bin"}
	if k.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: k.cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("run kmx %v: %v", args, err)
		}
		code = exit.ExitCode()
	}
	return result{code, out.String(), errb.String()}
}

// snapshot lists every path under h with its mode and size, to show that
// a reader wrote nothing.
func snapshot(t *testing.T, h string) string {
	t.Helper()
	var b strings.Builder
	if err := filepath.WalkDir(h, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %s %d %s\n", p, fi.Mode(), fi.Size(), fi.ModTime())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReadOnlyStateFolderReadsJournals: a user who makes the state folder
// read-only (chmod 0500 folders, 0400 files: still private) can read it:
// journal list, inspect and diff replay fine journals instead of calling
// them damaged, chat --history shows the conversation and test explain
// the retained failure, all without writing. A new run, a chat turn and a
// clear are refused with the step that makes the folder writable, and a
// folder others can read is still refused.
func TestReadOnlyStateFolderReadsJournals(t *testing.T) {
	// A folder another user can reach (the binary and agent copies).
	dir, err := os.MkdirTemp("", "kmx-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(demoFile("release-notes.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "release-notes.agent.md")
	failing := filepath.Join(dir, "failing.agent.md")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(failing, []byte("---\nname: failing\ndescription: fails on the fake\nmodel: fake\n---\nReply with exactly `goodbye`.\n\n## Examples\n\n```yaml\n- id: greets\n  input: hi\n  assert:\n    - contains: hello\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := filepath.Join(dir, "kmx")
	if err := os.Mkdir(h, 0o700); err != nil {
		t.Fatal(err)
	}
	runID := regexp.MustCompile(`run (\S+) ·`)
	var runs []string
	for range 2 {
		r := kmx(t, h, "test", file)
		m := runID.FindStringSubmatch(r.stdout)
		if r.code != ExitOK || m == nil {
			t.Fatalf("test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		runs = append(runs, m[1])
	}
	if r := kmx(t, h, "test", failing); r.code != ExitFailure {
		t.Fatalf("failing test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := kmx(t, h, "chat", file, "--input", "hello"); r.code != ExitOK {
		t.Fatalf("chat: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	ro := readOnlyFolder(t, h, dir)
	before := snapshot(t, h)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"journal", "list"}, runs[1]},
		{[]string{"journal", "list", "--file", file}, runs[0]},
		{[]string{"journal", "inspect", runs[0]}, "VERIFIED"},
		{[]string{"journal", "inspect", runs[0], "--json"}, `"runId": "` + runs[0]},
		{[]string{"journal", "diff", runs[0], runs[1]}, "SAME"},
		{[]string{"chat", file, "--history"}, "Release notes: hello"},
		{[]string{"test", "explain", failing}, "greets"},
	} {
		r := ro.run(t, tc.args...)
		if r.code != ExitOK || !strings.Contains(r.stdout, tc.want) || strings.Contains(r.stdout+r.stderr, "damaged") {
			t.Errorf("kmx %s on a read-only state folder: exit %d, want 0 and %q\n%s%s", strings.Join(tc.args, " "), r.code, tc.want, r.stdout, r.stderr)
		}
	}
	if after := snapshot(t, h); after != before {
		t.Errorf("reading changed the read-only state folder:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	for _, args := range [][]string{
		{"test", file},
		{"chat", file, "--input", "again"},
		{"journal", "clear", runs[0]},
		{"test", "explain", failing, "--clear"},
	} {
		r := ro.run(t, args...)
		if r.code != ExitRefusal || !strings.Contains(r.stderr, "is read-only (mode 0500)") || !strings.Contains(r.stderr, "next: make it and what kmx keeps in it writable with chmod -R u+w "+h) {
			t.Errorf("kmx %s on a read-only state folder: exit %d, want %d with the step that makes it writable\n%s%s", strings.Join(args, " "), r.code, ExitRefusal, r.stdout, r.stderr)
		}
	}

	// Read-only is private; a folder group can read is not, for readers too.
	if err := os.Chmod(h, 0o550); err != nil {
		t.Fatal(err)
	}
	if r := ro.run(t, "journal", "list"); r.code != ExitRefusal || !strings.Contains(r.stderr, "has mode 0550") {
		t.Errorf("journal list on a state folder its group can read: exit %d, want %d and a refusal\n%s%s", r.code, ExitRefusal, r.stdout, r.stderr)
	}
}
