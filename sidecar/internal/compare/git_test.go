package compare

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a git repository in a temporary folder, isolated from the
// user's and the system's git configuration.
func gitRepo(t *testing.T) (dir string, git func(args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("these tests need git on PATH: %v", err)
	}
	dir = t.TempDir()
	home := t.TempDir()
	git = func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	return dir, git
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every file under dir with its contents, to prove a
// refusal or a read changed nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[p] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReadAtRevision(t *testing.T) {
	dir, git := gitRepo(t)
	file := filepath.Join(dir, "agents", "a.agent.md")
	write(t, file, "first\n")
	git("add", ".")
	git("commit", "-q", "-m", "one")
	first := git("rev-parse", "HEAD")
	write(t, file, "second\n")
	git("commit", "-q", "-am", "two")
	write(t, file, "working copy\n")
	before := snapshot(t, dir)

	got, err := ReadAtRevision(context.Background(), file, "HEAD~1")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Source) != "first\n" || got.Baseline.Commit != first || got.Baseline.Rev != "HEAD~1" || got.Baseline.Path != "agents/a.agent.md" {
		t.Errorf("got %q at %+v", got.Source, got.Baseline)
	}
	got, err = ReadAtRevision(context.Background(), file, "HEAD")
	if err != nil || string(got.Source) != "second\n" {
		t.Fatalf("HEAD: %q, %v", got.Source, err)
	}
	// A relative path from inside the repository reads the same file.
	t.Chdir(filepath.Join(dir, "agents"))
	got, err = ReadAtRevision(context.Background(), "a.agent.md", first[:10])
	if err != nil || string(got.Source) != "first\n" {
		t.Fatalf("relative path: %q, %v", got.Source, err)
	}
	if after := snapshot(t, dir); len(after) != len(before) || after[file] != "working copy\n" {
		t.Errorf("reading a revision changed the work tree or .git")
	}
}

// TestReadAtRevisionRefusals: outside git, an unknown revision, a file
// absent at the revision, a folder or a symlink at its path, an option
// for a revision: each is a RevisionError that says what to change, and
// nothing in the folder changed.
func TestReadAtRevisionRefusals(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "a.agent.md")
	write(t, outside, "x\n")

	dir, git := gitRepo(t)
	file := filepath.Join(dir, "a.agent.md")
	write(t, filepath.Join(dir, "other.md"), "o\n")
	git("add", ".")
	git("commit", "-q", "-m", "before the agent")
	write(t, file, "x\n")
	git("add", ".")
	git("commit", "-q", "-m", "the agent")
	if err := os.Symlink("other.md", filepath.Join(dir, "link.agent.md")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "folder.agent.md", "x"), "x\n")
	git("add", ".")
	git("commit", "-q", "-m", "a link and a folder")
	if err := os.Remove(filepath.Join(dir, "link.agent.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "folder.agent.md")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "link.agent.md"), "now a file\n")
	write(t, filepath.Join(dir, "folder.agent.md"), "now a file\n")
	before := snapshot(t, dir)

	for _, c := range []struct {
		name, path, rev string
		want            []string
	}{
		{"outside git", outside, "HEAD", []string{"not inside a git work tree", "--baseline none"}},
		{"unknown revision", file, "no-such-branch", []string{"git knows no commit no-such-branch", "fetch-depth: 0"}},
		{"absent at the revision", file, "HEAD~2", []string{"a.agent.md did not exist at HEAD~2", "--baseline none"}},
		{"a symlink at the revision", filepath.Join(dir, "link.agent.md"), "HEAD", []string{"was a symbolic link at HEAD"}},
		{"a folder at the revision", filepath.Join(dir, "folder.agent.md"), "HEAD", []string{"was a folder at HEAD"}},
		{"an option", file, "--output=/tmp/x", []string{"starts with '-'"}},
		{"empty", file, "", []string{"--baseline is empty"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadAtRevision(context.Background(), c.path, c.rev)
			var re *RevisionError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a RevisionError", err)
			}
			text := re.Error() + " / " + re.NextStep()
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q does not say %q", text, w)
				}
			}
		})
	}
	after := snapshot(t, dir)
	if len(after) != len(before) {
		t.Errorf("the refusals changed the repository: %d files before, %d after", len(before), len(after))
	}
	for p, s := range before {
		if after[p] != s {
			t.Errorf("%s changed", p)
		}
	}
}

func TestInstructionsAt(t *testing.T) {
	single := "---\nname: a\nmodel: fake\n---\nReply with exactly `old`.\n\n## Examples\n\n```yaml\n- id: x\n  input: hi\n  assert:\n    - contains: old\n  oops: [\n```\n"
	got, err := InstructionsAt("a.agent.md", []byte(single), "", nil, "HEAD~1")
	if err != nil {
		t.Fatalf("an error in the old Examples block refused the baseline: %v", err)
	}
	if !strings.Contains(got, "Reply with exactly `old`.") || strings.Contains(got, "id: x") {
		t.Errorf("instructions %q", got)
	}
	// The pair form: the old agent file's whole body, with the current
	// examples file.
	body := "---\nname: a\n---\nReply with exactly `old`.\n"
	examples := "- id: x\n  input: hi\n  assert:\n    - contains: old\n"
	got, err = InstructionsAt("a.agent.md", []byte(body), "a.agent.examples.yaml", []byte(examples), "v1")
	if err != nil || got != "Reply with exactly `old`.\n" {
		t.Errorf("pair: %q, %v", got, err)
	}
	// A header the parser refuses refuses the baseline, naming the error.
	bad := "---\nname: a\ntools: {\n---\nReply with exactly `old`.\n"
	_, err = InstructionsAt("a.agent.md", []byte(bad), "", nil, "v1")
	var re *RevisionError
	if !errors.As(err, &re) || !strings.Contains(re.Error(), "has an error before its examples") {
		t.Errorf("bad header: %v", err)
	}
}
