//go:build !kmxtest

package ghread

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/ghread/ghreadtest"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// releaseBuild matches the sidecar's go build in scripts/package.sh and in
// the Makefile's build target: the two ways kmx is built for users.
var releaseBuild = regexp.MustCompile(`(?m)^.*\bbuild\b.*\./sidecar/cmd/kmx.*$|^.*\bbuild -trimpath -ldflags.*\\$`)

// TestReleaseBinary builds kmx as scripts/package.sh builds it for a .vsix
// (and once more with -tags kmxtest, the control) and proves the shipped
// binary has no test endpoint.
func TestReleaseBinary(t *testing.T) {
	root := testutil.ModuleRoot(t)
	if !linksGhread(t, root) {
		t.Fatal("kmx no longer links ghread: there is no live read in the binary to prove (update this test if that is meant)")
	}
	release := buildKMXFile(t, root)
	tagged := buildKMXFile(t, root, "-tags", "kmxtest")
	t.Run("HasNoTestEndpoint", func(t *testing.T) { hasNoTestEndpoint(t, root, release, tagged) })
	t.Run("RefusesTheFixture", func(t *testing.T) { refusesTheFixture(t, release, tagged) })
}

// hasNoTestEndpoint: the release builds name no build tag, and the binary
// holds none of the override's code (its CA and timeout variables appear
// nowhere in it), while the kmxtest build does hold them.
func hasNoTestEndpoint(t *testing.T, root, releaseBin, taggedBin string) {
	for _, script := range []string{"scripts/package.sh", "Makefile"} {
		b, err := os.ReadFile(filepath.Join(root, script))
		if err != nil {
			t.Fatal(err)
		}
		lines := releaseBuild.FindAllString(string(b), -1)
		if len(lines) == 0 {
			t.Fatalf("%s: no go build of ./sidecar/cmd/kmx found; update this test with the release build", script)
		}
		for _, l := range lines {
			if strings.Contains(l, "-tags") {
				t.Errorf("%s builds kmx with a build tag: %s", script, strings.TrimSpace(l))
			}
		}
	}
	markers := [][]byte{[]byte(TestCAEnv), []byte(TestTimeoutEnv)}
	release := readFile(t, releaseBin)
	for _, m := range markers {
		if bytes.Contains(release, m) {
			t.Errorf("the release binary holds %q: the test endpoint override is compiled in", m)
		}
	}
	tagged := readFile(t, taggedBin)
	for _, m := range markers {
		if !bytes.Contains(tagged, m) {
			t.Errorf("the kmxtest build lacks %q: this test's markers no longer find the override", m)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buildKMXFile builds ./sidecar/cmd/kmx with package.sh's flags (plus
// extra) and returns the binary's path.
func buildKMXFile(t *testing.T, root string, extra ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kmx")
	// No budget of its own: a cold release build on a loaded machine takes
	// minutes, and go test's -timeout bounds the whole package.
	args := append([]string{"build", "-trimpath", "-ldflags=-s -w"}, extra...)
	cmd := exec.CommandContext(t.Context(), "go", append(args, "-o", out, "./sidecar/cmd/kmx")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", extra, err, msg)
	}
	return out
}

// linksGhread reports whether the kmx command imports this package.
func linksGhread(t *testing.T, root string) bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "./sidecar/cmd/kmx")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	return bytes.Contains(out, []byte("/sidecar/internal/ghread\n"))
}

// refusesTheFixture runs the release binary on an agent whose model calls
// the bound tool, with the test endpoint override pointing at an owned
// fixture: the read is refused, naming the variable, and the fixture sees
// no request. The same run with the kmxtest build reaches the fixture, so
// the refusal is the build's doing and not a broken setup.
func refusesTheFixture(t *testing.T, releaseBin, taggedBin string) {
	// ghreadtest cannot import this package (this test imports it), so it
	// repeats the variable names; a drift would send the release run to
	// GitHub instead of refusing.
	if ghreadtest.EndpointEnv != TestEndpointEnv || ghreadtest.CAEnv != TestCAEnv {
		t.Fatalf("ghreadtest names %s and %s, ghread %s and %s", ghreadtest.EndpointEnv, ghreadtest.CAEnv, TestEndpointEnv, TestCAEnv)
	}
	const repository = "octo-org/Hello-World"
	dir := t.TempDir()
	f, err := ghreadtest.Start(dir, ghreadtest.Options{Items: []ghreadtest.Item{{Number: 7, Title: "Add the tool harness", Repository: repository, Merged: true}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	agent := filepath.Join(dir, "merged.agent.md")
	src := "---\ntools: [github_list_merged_prs]\n---\nList what was merged.\n\nCall the tool `github_list_merged_prs`\n\n## Examples\n\n```yaml\n" +
		"- id: weekly\n  input: What was merged?\n  assert:\n    - contains: \"Add the tool harness\"\n```\n"
	if err := os.WriteFile(agent, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools.json"), []byte(`{"schemaVersion": "kmx.local-tools/v1", "bindings": [{"name": "github_list_merged_prs", "endpointRef": "github-mcp", "repository": "`+repository+`"}], "endpoints": {"github-mcp": {"url": "https://api.githubcopilot.com/mcp/readonly", "credentialEnv": "KMX_TEST_GH"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// run gives each run its own state folder, returned for inspection.
	run := func(bin string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		home := testutil.PrivateDir(t)
		cmd := exec.CommandContext(ctx, bin, "test", "merged.agent.md", "--model", "fake", "--tool-bindings", "tools.json")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "KMX_HOME="+home, "KMX_TEST_GH=fixture-credential-value-4242")
		cmd.Env = append(cmd.Env, f.Env()...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("%s: %v", bin, err)
		}
		return cmd.ProcessState.ExitCode(), string(out), home
	}

	// Refused at startup, before the journal exists: exit 2, the
	// variable named, what to change, and an empty state folder.
	code, out, home := run(releaseBin)
	if code != 2 || !strings.Contains(out, TestEndpointEnv+" is set, but this build of kmx has no test endpoint") || !strings.Contains(out, "next: "+EndpointHint) {
		t.Fatalf("the release binary did not refuse the override at startup: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "fixture-credential-value-4242") {
		t.Error("the output quotes the credential")
	}
	if n := f.Requests(); n != 0 {
		t.Fatalf("the release binary sent %d requests to the fixture", n)
	}
	if names := testutil.DirNames(t, home); len(names) != 0 {
		t.Fatalf("the refused run left %v in its state folder", names)
	}

	code, out, home = run(taggedBin)
	if code != 0 || f.Calls() != 1 {
		t.Fatalf("the kmxtest build did not read from the fixture (exit %d, %d calls): this test's setup is broken\n%s", code, f.Calls(), out)
	}
	if len(testutil.DirNames(t, home)) == 0 {
		t.Fatal("the kmxtest run left its state folder empty: the empty-folder check above proves nothing")
	}
}
