package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEitherFileOfAPair: check, test and run accept the agent file or its
// sibling examples file; diagnostics name the file they are in, and the
// instructions sent are the agent's whole body.
func TestEitherFileOfAPair(t *testing.T) {
	h := home(t)
	dir := t.TempDir()
	agent := filepath.Join(dir, "reviewer.agent.md")
	examples := filepath.Join(dir, "reviewer.agent.examples.yaml")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(agent, "---\nname: Code Reviewer\nmodel: fake\n---\nReply with exactly `Review:` followed by the input\n")
	write(examples, "- id: short\n  input: Rename a variable\n  assert: [contains: \"Review: Rename\"]\n")
	for _, p := range []string{agent, examples} {
		if r := kmx(t, h, "test", p); r.code != ExitOK || !strings.Contains(r.stdout, "PASS     short") {
			t.Errorf("kmx test %s: exit %d\n%s%s", p, r.code, r.stdout, r.stderr)
		}
		if r := kmx(t, h, "check", p); r.code != ExitOK || !strings.Contains(r.stdout, "ok (valid)") {
			t.Errorf("kmx check %s: exit %d\n%s%s", p, r.code, r.stdout, r.stderr)
		}
	}
	write(examples, "- id: a\n  input: x\n  assert: [containz: x]\n- id: b\n  input: y\n")
	if r := kmx(t, h, "check", agent); r.code != ExitFailure || !strings.Contains(r.stdout, examples+":3:") || !strings.Contains(r.stdout, "KMX3002") {
		t.Errorf("kmx check with a bad examples file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	orphan := filepath.Join(dir, "orphan.agent.examples.yaml")
	write(orphan, "- id: a\n  input: x\n")
	if r := kmx(t, h, "check", orphan); r.code != ExitRefusal || !strings.Contains(r.stderr, "orphan.agent.md, which does not exist") {
		t.Errorf("kmx check of an examples file without its agent: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestExplainFromEitherFileOfAPair: failures are kept per agent file, so
// kmx test explain given the examples file explains the agent's failures.
func TestExplainFromEitherFileOfAPair(t *testing.T) {
	h := home(t)
	dir := t.TempDir()
	agent := filepath.Join(dir, "reviewer.agent.md")
	examples := filepath.Join(dir, "reviewer.agent.examples.yaml")
	if err := os.WriteFile(agent, []byte("---\nname: Code Reviewer\nmodel: fake\n---\nReply with exactly `Review:` followed by the input\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(examples, []byte("- id: short\n  input: Rename a variable\n  assert: [contains: \"never said\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := kmx(t, h, "test", agent); r.code != ExitFailure {
		t.Fatalf("kmx test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := kmx(t, h, "test", "explain", "--file", agent)
	got := kmx(t, h, "test", "explain", "--file", examples)
	if want.code != ExitOK || !strings.Contains(want.stdout, "short") || !strings.Contains(want.stdout, "recorded for the current text") {
		t.Fatalf("explain the agent file: exit %d\n%s%s", want.code, want.stdout, want.stderr)
	}
	if got.code != want.code || got.stdout != want.stdout {
		t.Errorf("explain the examples file: exit %d\n%s%s\nwant the agent file's:\n%s", got.code, got.stdout, got.stderr, want.stdout)
	}
}
