//go:build !kmxtest

package ghread

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// releaseBuild matches the sidecar's go build in scripts/package.sh and in
// the Makefile's build target: the two ways kmx is built for users.
var releaseBuild = regexp.MustCompile(`(?m)^.*\bbuild\b.*\./sidecar/cmd/kmx.*$|^.*\bbuild -trimpath -ldflags.*\\$`)

// TestReleaseBinaryHasNoTestEndpoint builds kmx as scripts/package.sh
// builds it for a .vsix and proves the test endpoint override is compiled
// out: the release builds name no build tag, and the binary holds none of
// the override's code (its CA and timeout variables appear nowhere in it),
// while the same build with the kmxtest tag does hold them.
func TestReleaseBinaryHasNoTestEndpoint(t *testing.T) {
	root := testutil.ModuleRoot(t)
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
	if !linksGhread(t, root) {
		t.Skip("kmx does not link ghread yet (the live read is not wired into runs): there is no client in the binary to override")
	}
	markers := [][]byte{[]byte(TestCAEnv), []byte(TestTimeoutEnv)}
	release := buildKMX(t, root)
	for _, m := range markers {
		if bytes.Contains(release, m) {
			t.Errorf("the release binary holds %q: the test endpoint override is compiled in", m)
		}
	}
	tagged := buildKMX(t, root, "-tags", "kmxtest")
	for _, m := range markers {
		if !bytes.Contains(tagged, m) {
			t.Errorf("the kmxtest build lacks %q: this test's markers no longer find the override", m)
		}
	}
}

// buildKMX builds ./sidecar/cmd/kmx with package.sh's flags (plus extra)
// and returns the binary's bytes.
func buildKMX(t *testing.T, root string, extra ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kmx")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"build", "-trimpath", "-ldflags=-s -w"}, extra...)
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", out, "./sidecar/cmd/kmx")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", extra, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
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
