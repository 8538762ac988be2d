package cli

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

const (
	passAgent    = "---\nmodel: fake\n---\nReply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - contains: ok\n```\n"
	failAgent    = "---\nmodel: fake\n---\nReply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - contains: nope\n```\n"
	invalidAgent = "Reply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - containz: ok\n```\n"
)

// agentTree writes name → body under a new folder and returns it.
func agentTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTestManyFiles: a folder is every *.agent.md under it, each file its
// own invocation and journal, one combined JSON and one JUnit document (a
// testsuite per file), and the exit code the worst of them.
func TestTestManyFiles(t *testing.T) {
	h := home(t)
	dir := agentTree(t, map[string]string{
		"a/pass.agent.md":         passAgent,
		"b/fail.agent.md":         failAgent,
		"notes.md":                passAgent,
		".hidden/skip.agent.md":   invalidAgent,
		"node_modules/x.agent.md": invalidAgent,
	})
	junit := filepath.Join(t.TempDir(), "junit.xml")
	r := kmx(t, h, "test", dir, "--json", "--junit", junit)
	if r.code != ExitFailure {
		t.Fatalf("exit %d (want 1, the worst: a fail)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var got testedFiles
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not one combined JSON document: %v\n%s", err, r.stdout)
	}
	if got.Schema != TestFilesSchema || got.Label != runner.Label || len(got.Files) != 2 {
		t.Fatalf("schema %q label %q files %d", got.Schema, got.Label, len(got.Files))
	}
	if got.Files[0].Verdict != "pass" || got.Files[1].Verdict != "fail" || got.Files[0].RunID == "" || got.Files[0].RunID == got.Files[1].RunID {
		t.Fatalf("per-file reports: %+v / %+v", got.Files[0], got.Files[1])
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 2 || doc.Suites[0].Failures != 0 || doc.Suites[1].Failures != 1 {
		t.Fatalf("JUnit suites: %+v", doc.Suites)
	}

	// A refused file is the worst outcome, and the others still run.
	bad := filepath.Join(dir, "c", "bad.agent.md")
	if err := os.MkdirAll(filepath.Dir(bad), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(invalidAgent), 0o600); err != nil {
		t.Fatal(err)
	}
	r = kmx(t, h, "test", dir)
	if r.code != ExitRefusal || !strings.Contains(r.stdout, "verdict pass") || !strings.Contains(r.stdout, "verdict fail") || !strings.Contains(r.stderr, "bad.agent.md") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// Two files given by name: the same combined form.
	r = kmx(t, h, "test", filepath.Join(dir, "a", "pass.agent.md"), filepath.Join(dir, "a", "pass.agent.md"), "--json")
	if r.code != ExitOK || !strings.Contains(r.stdout, TestFilesSchema) {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestShardsSplitTheFilesStably: the shards of N cover every file once, and
// adding a file moves no other file to another shard.
func TestShardsSplitTheFilesStably(t *testing.T) {
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		files[n+".agent.md"] = passAgent
	}
	dir := agentTree(t, files)
	shards := func() map[string]int {
		out := map[string]int{}
		for k := 1; k <= 3; k++ {
			set, err := agentFiles("check", []string{dir}, strings.Join([]string{string(rune('0' + k)), "3"}, "/"), checkUsage)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range set.paths {
				if prev, dup := out[p]; dup {
					t.Fatalf("%s is in shards %d and %d", p, prev, k)
				}
				out[p] = k
			}
		}
		return out
	}
	before := shards()
	if len(before) != len(files) {
		t.Fatalf("the shards cover %d of %d files", len(before), len(files))
	}
	if err := os.WriteFile(filepath.Join(dir, "new.agent.md"), []byte(passAgent), 0o600); err != nil {
		t.Fatal(err)
	}
	after := shards()
	for p, k := range before {
		if after[p] != k {
			t.Errorf("%s moved from shard %d to %d when a file was added", p, k, after[p])
		}
	}
	h := home(t)
	for _, bad := range []string{"0/3", "4/3", "x", "1/0"} {
		if r := kmx(t, h, "check", dir, "--shard", bad); r.code != ExitRefusal || !strings.Contains(r.stderr, "--shard") {
			t.Errorf("--shard %s: exit %d %s", bad, r.code, r.stderr)
		}
	}
	// kmx check over the shards together checks every file once.
	var seen []string
	for _, k := range []string{"1/3", "2/3", "3/3"} {
		r := kmx(t, h, "check", dir, "--shard", k)
		if r.code != ExitOK {
			t.Fatalf("check --shard %s: exit %d %s", k, r.code, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if line != "" {
				seen = append(seen, strings.SplitN(line, ":", 2)[0])
			}
		}
	}
	sort.Strings(seen)
	if len(seen) != len(files)+1 {
		t.Fatalf("checked %d files over the shards, want %d: %v", len(seen), len(files)+1, seen)
	}
}

func TestCheckFolderFailsOnUnfinished(t *testing.T) {
	dir := agentTree(t, map[string]string{"ok.agent.md": passAgent, "sub/cut.agent.md": passAgent[:len(passAgent)-20]})
	r := kmx(t, home(t), "check", dir)
	if r.code != ExitFailure || !strings.Contains(r.stdout, "ok.agent.md: ok") || !strings.Contains(r.stderr, "still being written") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// Issue 31 item 11: in a folder run every stderr line about one file names
// it, once ("kmx: ci/bad.agent.md: ci/bad.agent.md has 1 error(s)" named
// it twice).
func TestAFolderRunsStderrNamesEachFileOnce(t *testing.T) {
	h := home(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.agent.md")
	if err := os.WriteFile(bad, []byte("Reply with exactly `x`.\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - containz: x\n```\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok, err := os.ReadFile(demoFile("release-notes.agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.agent.md"), ok, 0o600); err != nil {
		t.Fatal(err)
	}
	r := kmx(t, h, "test", dir)
	if r.code != ExitRefusal {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if strings.HasPrefix(line, "next:") {
			continue
		}
		if n := strings.Count(line, bad); n != 1 {
			t.Errorf("stderr line names %s %d times: %q", bad, n, line)
		}
	}
	if !strings.Contains(r.stderr, "kmx: "+bad+" has 1 error(s)") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
