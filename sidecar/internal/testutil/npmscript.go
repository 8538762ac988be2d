package testutil

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// installFromNPM runs one of the repository's scripts/*.sh installers, which
// fetch a pinned third-party test tool from npm into a cache outside the
// repository, and returns what the script printed on stdout. It skips only
// when CI is unset and npm is missing (skipWhy says what is skipped); under
// CI=true a missing npm fails the test (mustRun says what must run), so the
// tests that need the tool are never silently skipped in CI.
func installFromNPM(tb testing.TB, script string, timeout time.Duration, skipWhy, mustRun string) []byte {
	tb.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "" {
			tb.Skip("npm is not installed and CI is unset: " + skipWhy)
		}
		tb.Fatalf("CI is set but npm is not installed: %s", mustRun)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(ModuleRoot(tb), "scripts", script))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("scripts/%s: %v\n%s", script, err, stderr.String())
	}
	return out
}
