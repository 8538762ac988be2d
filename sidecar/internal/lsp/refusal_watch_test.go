package lsp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

// TestKmxYAMLChangeOnDiskRechecksRefusals: what a run would refuse
// depends on kmx.yaml beside the file, so a change to kmx.yaml on disk
// (workspace/didChangeWatchedFiles, from the extension's file watcher)
// re-checks the refusal on the open agent file beside it: the fake's tool
// call with no recording is refused until kmx.yaml disables the tool, and
// an unusable kmx.yaml is shown once, as the kmx-yaml Error.
func TestKmxYAMLChangeOnDiskRechecksRefusals(t *testing.T) {
	src := strings.Replace(withTools, "Reply with exactly `ok`\n", "Call the tool `ping`\n", 1)
	path := writeAgent(t, "x.agent.md", src)
	settings := filepath.Join(filepath.Dir(path), "kmx.yaml")
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	uri := fileURI(path)
	c.open(uri, 1, src)
	codes := func(from int) []string {
		t.Helper()
		got, _ := c.diagnosticsFor(from, uri, 1)
		var out []string
		for _, d := range got.Diagnostics {
			if d.Code == agentfile.CodeUnknownTool {
				continue // ping is not a VS Code tool: a warning beside the refusal
			}
			out = append(out, fmt.Sprintf("%d:%s:%d", d.Range.Start.Line, d.Code, d.Severity))
		}
		return out
	}
	// The fake would call ping, which example one has no recording for:
	// not a refusal, the call answers "not available in this test".
	if got := codes(0); fmt.Sprint(got) != "[]" {
		t.Fatalf("before kmx.yaml: %v", got)
	}
	for _, step := range []struct{ yaml, want string }{
		{"tools:\n  ping: Disabled\n", "[]"},
		{"tools:\n  ping: Ask\n", "[3:kmx-yaml:1]"},
	} {
		if err := os.WriteFile(settings, []byte(step.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		from := c.count()
		c.notify("workspace/didChangeWatchedFiles", map[string]any{"changes": []any{map[string]any{"uri": fileURI(settings), "type": 2}}})
		if got := codes(from); fmt.Sprint(got) != step.want {
			t.Errorf("kmx.yaml %q: diagnostics %v, want %v", step.yaml, got, step.want)
		}
	}
}
