package mcpserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/mcpserver"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

const okAgent = "---\nmodel: fake\n---\nReply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - contains: ok\n```\n"

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func resolved(t *testing.T, dirs ...string) []string {
	t.Helper()
	r, err := mcpserver.ResolveRoots(dirs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestToolsStayInsideTheirRoots: Run, Test and Explain read only *.agent.md
// files inside the server's roots (symlinks resolved), and refuse any other
// path before reading it, in words that do not say whether it exists.
func TestToolsStayInsideTheirRoots(t *testing.T) {
	base := t.TempDir()
	inside, outside := filepath.Join(base, "in"), filepath.Join(base, "out")
	ok := writeFile(t, filepath.Join(inside, "ok.agent.md"), okAgent)
	writeFile(t, filepath.Join(inside, "notes.md"), okAgent)
	secret := writeFile(t, filepath.Join(outside, "secret.agent.md"), okAgent)
	if err := os.Symlink(secret, filepath.Join(inside, "link.agent.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(inside, "door")); err != nil {
		t.Fatal(err)
	}
	home := testutil.PrivateDir(t)
	cs := connect(t, mcpserver.Config{Version: "test", Getenv: envWith(map[string]string{"KMX_HOME": home}), Roots: resolved(t, inside), ExplicitRoots: true})

	if res := call(t, cs, "Test", map[string]any{"file": ok}); res.IsError || !strings.Contains(text(res), "verdict pass") {
		t.Fatalf("a file inside the root: %s", text(res))
	}
	refused := []string{
		"/etc/passwd",
		secret,
		filepath.Join(outside, "missing.agent.md"),
		filepath.Join(inside, "..", "out", "secret.agent.md"),
		filepath.Join(inside, "link.agent.md"),
		filepath.Join(inside, "door", "secret.agent.md"),
		filepath.Join(inside, "door", "missing.agent.md"),
		filepath.Join(inside, "notes.md"),
	}
	for _, tool := range []string{"Run", "Test", "Explain"} {
		var shapes []string
		for _, f := range refused {
			res := call(t, cs, tool, map[string]any{"file": f})
			got := text(res)
			if !res.IsError || !strings.Contains(got, "is not an *.agent.md file inside this server's roots") || !strings.Contains(got, "next: ") {
				t.Errorf("%s %s: isError %v\n%s", tool, f, res.IsError, got)
			}
			if raw, _ := json.Marshal(res); strings.Contains(string(raw), "revision") || strings.Contains(got, "sha256") {
				t.Errorf("%s %s: a refused file's content or hash leaked:\n%s", tool, f, got)
			}
			shapes = append(shapes, strings.ReplaceAll(got, f, "FILE"))
		}
		// Existing and missing files outside the roots read the same.
		for i := 1; i < len(shapes); i++ {
			if shapes[i] != shapes[0] {
				t.Errorf("%s: refusal for %s differs from %s:\n%s\n%s", tool, refused[i], refused[0], shapes[i], shapes[0])
			}
		}
	}
	// Nothing outside was journaled or read: no run for the secret agent.
	if entries, _ := os.ReadDir(filepath.Join(home, "local-preview", "journals")); len(entries) > 2 {
		t.Errorf("refused calls created journals: %d entries", len(entries))
	}
}

// TestClientRootsNarrowOrReplace: a client's MCP roots replace the working
// directory default, and narrow roots given with --root.
func TestClientRootsNarrowOrReplace(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	inA := writeFile(t, filepath.Join(a, "x.agent.md"), okAgent)
	inB := writeFile(t, filepath.Join(b, "y.agent.md"), okAgent)
	env := envWith(map[string]string{"KMX_HOME": testutil.PrivateDir(t)})

	// Default roots (as if the working directory were b); the client says a.
	cs := connectWithRoots(t, mcpserver.Config{Version: "test", Getenv: env, Roots: resolved(t, b)}, a)
	if res := call(t, cs, "Test", map[string]any{"file": inA}); res.IsError {
		t.Errorf("client root a replaces the default: %s", text(res))
	}
	if res := call(t, cs, "Test", map[string]any{"file": inB}); !res.IsError {
		t.Errorf("b is no longer a root once the client names its roots")
	}

	// --root base; the client says a: only a.
	cs = connectWithRoots(t, mcpserver.Config{Version: "test", Getenv: env, Roots: resolved(t, base), ExplicitRoots: true}, a)
	if res := call(t, cs, "Test", map[string]any{"file": inA}); res.IsError {
		t.Errorf("a is inside both: %s", text(res))
	}
	if res := call(t, cs, "Test", map[string]any{"file": inB}); !res.IsError {
		t.Errorf("b is inside --root but not the client's roots")
	}

	// --root b; the client says a: nothing.
	cs = connectWithRoots(t, mcpserver.Config{Version: "test", Getenv: env, Roots: resolved(t, b), ExplicitRoots: true}, a)
	if res := call(t, cs, "Test", map[string]any{"file": inA}); !res.IsError {
		t.Errorf("a client cannot widen --root")
	}
}

// TestOversizedFileIsRefused: the 8 MiB cap applies to MCP too.
func TestOversizedFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	big := writeFile(t, filepath.Join(dir, "big.agent.md"), strings.Repeat("x", 8<<20+1))
	cs := connect(t, mcpserver.Config{Version: "test", Getenv: envWith(map[string]string{"KMX_HOME": testutil.PrivateDir(t)}), Roots: resolved(t, dir), ExplicitRoots: true})
	for _, tool := range []string{"Test", "Explain"} {
		res := call(t, cs, tool, map[string]any{"file": big})
		if !res.IsError || !strings.Contains(text(res), "larger than 8 MiB") {
			t.Errorf("%s: %s", tool, text(res))
		}
	}
}

// TestEitherFileOfAPairStaysInsideTheRoots: Run, Test and Explain accept
// an agent's NAME.agent.examples.yaml and act on the agent file beside it
// (Explain shows that agent's retained failures), and the mapped agent
// file and the sibling a run reads are confined like the named file: a
// symlink beside an agent file cannot lead outside the roots.
func TestEitherFileOfAPairStaysInsideTheRoots(t *testing.T) {
	base := t.TempDir()
	inside, outside := filepath.Join(base, "in"), filepath.Join(base, "out")
	const agent = "---\nmodel: fake\n---\nReply with exactly `ok`.\n"
	const failing = "- id: a\n  input: hi\n  assert:\n    - contains: nope\n"
	writeFile(t, filepath.Join(inside, "pair.agent.md"), agent)
	examples := writeFile(t, filepath.Join(inside, "pair.agent.examples.yaml"), failing)
	home := testutil.PrivateDir(t)
	cs := connect(t, mcpserver.Config{Version: "test", Getenv: envWith(map[string]string{"KMX_HOME": home}), Roots: resolved(t, inside), ExplicitRoots: true})

	res := call(t, cs, "Test", map[string]any{"file": examples})
	if res.IsError || !strings.Contains(text(res), "verdict fail") {
		t.Fatalf("Test of the examples file: %s", text(res))
	}
	res = call(t, cs, "Explain", map[string]any{"file": examples})
	if res.IsError || !strings.Contains(text(res), "fail a") {
		t.Fatalf("Explain of the examples file should explain the agent's failures: %s", text(res))
	}

	// The examples file inside, its agent file a symlink to one outside.
	writeFile(t, filepath.Join(outside, "secret.agent.md"), agent)
	if err := os.Symlink(filepath.Join(outside, "secret.agent.md"), filepath.Join(inside, "linked.agent.md")); err != nil {
		t.Fatal(err)
	}
	linkedExamples := writeFile(t, filepath.Join(inside, "linked.agent.examples.yaml"), failing)
	// An agent file inside whose sibling examples file leads outside.
	writeFile(t, filepath.Join(inside, "leaky.agent.md"), agent)
	writeFile(t, filepath.Join(outside, "leaky.agent.examples.yaml"), failing)
	if err := os.Symlink(filepath.Join(outside, "leaky.agent.examples.yaml"), filepath.Join(inside, "leaky.agent.examples.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"Run", "Test", "Explain"} {
		for _, f := range []string{linkedExamples, filepath.Join(outside, "leaky.agent.examples.yaml"), filepath.Join(inside, "leaky.agent.examples.yaml")} {
			res := call(t, cs, tool, map[string]any{"file": f})
			if !res.IsError || !strings.Contains(text(res), "is not an *.agent.md file inside this server's roots") {
				t.Errorf("%s %s: isError %v\n%s", tool, f, res.IsError, text(res))
			}
		}
	}
	for _, tool := range []string{"Run", "Test"} {
		for _, f := range []string{filepath.Join(inside, "leaky.agent.md")} {
			res := call(t, cs, tool, map[string]any{"file": f})
			if !res.IsError || !strings.Contains(text(res), "leads outside this server's roots") {
				t.Errorf("%s %s reads a sibling outside the roots: isError %v\n%s", tool, f, res.IsError, text(res))
			}
		}
	}
}

// TestWorkspaceOutsideTheRootsIsRefused: a real MCP client's Test of an
// agent file with a fixture workspace runs it when the fixture is inside
// the roots; an agent file named through a link outside the roots, whose
// fixture would be read beside the link, is refused before anything is
// read or journaled, and the outside fixture's content never reaches the
// result.
func TestWorkspaceOutsideTheRootsIsRefused(t *testing.T) {
	base := t.TempDir()
	inside, outside := filepath.Join(base, "in"), filepath.Join(base, "out")
	const agent = "---\nmodel: fake\ntools: ['read/readFile', 'edit/editFiles']\n---\nReplace `a - b` with `a + b` in `add.go`\n\n## Examples\n\n```yaml\n- id: fix\n  workspace: fx\n  input: fix it\n  assert:\n    - fileContains: {path: add.go, text: \"a + b\"}\n```\n"
	ok := writeFile(t, filepath.Join(inside, "fix.agent.md"), agent)
	writeFile(t, filepath.Join(inside, "fx", "add.go"), "return a - b\n")
	writeFile(t, filepath.Join(outside, "fx", "add.go"), "secret a - b\n")
	link := filepath.Join(outside, "fix.agent.md")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	home := testutil.PrivateDir(t)
	cs := connect(t, mcpserver.Config{Version: "test", Getenv: envWith(map[string]string{"KMX_HOME": home}), Roots: resolved(t, inside), ExplicitRoots: true})
	if res := call(t, cs, "Test", map[string]any{"file": ok}); res.IsError || !strings.Contains(text(res), "verdict pass") {
		t.Fatalf("a workspace inside the root: %s", text(res))
	}
	res := call(t, cs, "Test", map[string]any{"file": link})
	got := text(res)
	// Refused by the pair's check of the folder beside the link, or by the
	// workspace's own roots check (invocation.Request.CheckWorkspace,
	// tested in package invocation), whichever comes first.
	if !res.IsError || !strings.Contains(got, "roots") || !strings.Contains(got, "next: ") || strings.Contains(got, "secret") {
		t.Fatalf("a workspace outside the roots: isError %v\n%s", res.IsError, got)
	}
	if entries, _ := os.ReadDir(filepath.Join(home, "local-preview", "journals")); len(entries) > 2 {
		t.Errorf("the refused call created a journal: %d entries", len(entries))
	}
}
