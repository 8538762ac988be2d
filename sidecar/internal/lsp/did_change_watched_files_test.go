package lsp_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

// TestKmxYAMLChangeOnDiskRechecksTheAgentFile: a kmx.yaml written or
// removed beside an open agent file (workspace/didChangeWatchedFiles, which
// the extension sends for **/kmx.yaml) diagnoses the file again, without an
// edit, and kmx/examples reports the settings revision a run would freeze,
// the one a run's report records.
func TestKmxYAMLChangeOnDiskRechecksTheAgentFile(t *testing.T) {
	path := writeAgent(t, "x.agent.md", withTools)
	settings := filepath.Join(filepath.Dir(path), "kmx.yaml")
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	uri := fileURI(path)
	c.open(uri, 1, withTools)
	hasYAMLError := func(d publishedDiagnostics) bool {
		for _, x := range d.Diagnostics {
			if x.Code == "kmx-yaml" {
				return true
			}
		}
		return false
	}
	got, at := c.diagnosticsFor(0, uri, 1)
	if hasYAMLError(got) {
		t.Fatalf("diagnostics before kmx.yaml exists = %+v", got.Diagnostics)
	}
	var before lsp.ExamplesResult
	c.mustCall(lsp.MethodExamples, lsp.DocumentParams{URI: uri}, &before)
	var rep lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri}, &rep)
	if before.Tools.Revision == "" || rep.Report == nil || rep.Report.Agent.SettingsRevision != before.Tools.Revision {
		t.Fatalf("examples revision %q, report's %+v", before.Tools.Revision, rep.Report)
	}

	if err := os.WriteFile(settings, []byte("tools:\n  ping: Ask\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An unrelated file changing does nothing; kmx.yaml beside the file does.
	c.notify("workspace/didChangeWatchedFiles", map[string]any{"changes": []map[string]any{
		{"uri": fileURI(filepath.Join(t.TempDir(), "kmx.yaml")), "type": 1},
		{"uri": fileURI(settings), "type": 1},
	}})
	got, at = c.diagnosticsFor(at+1, uri, 1)
	if !hasYAMLError(got) {
		t.Fatalf("diagnostics after kmx.yaml broke = %+v", got.Diagnostics)
	}

	if err := os.WriteFile(settings, []byte("tools:\n  ping: Disabled\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.notify("workspace/didChangeWatchedFiles", map[string]any{"changes": []map[string]any{{"uri": fileURI(settings), "type": 2}}})
	got, _ = c.diagnosticsFor(at+1, uri, 1)
	if hasYAMLError(got) {
		t.Fatalf("diagnostics after kmx.yaml was fixed = %+v", got.Diagnostics)
	}
	var after lsp.ExamplesResult
	c.mustCall(lsp.MethodExamples, lsp.DocumentParams{URI: uri}, &after)
	if after.Tools.Revision == "" || after.Tools.Revision == before.Tools.Revision {
		t.Fatalf("revision %q after Disabling ping, %q before: a result of the old settings must look out of date", after.Tools.Revision, before.Tools.Revision)
	}
}
