package lsp_test

import (
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/localpreview"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

// TestRefusalsInProblems: what a run would refuse under the current
// settings is a diagnostic on the causing line (code kmx-refusal), and it
// goes away when the settings change so the run would go ahead.
func TestRefusalsInProblems(t *testing.T) {
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	uri := "file:///work/refused.agent.md"
	c.open(uri, 1, "---\nmodel: llama3\n---\nSay ok.\n\n## Examples\n\n```yaml\n- id: one\n  input: hi\n  assert:\n    - contains: ok\n```\n")
	got, _ := c.diagnosticsFor(0, uri, 1)
	var refusal *diagJ
	for i, d := range got.Diagnostics {
		if d.Code == localpreview.CodeRefusal {
			refusal = &got.Diagnostics[i]
		}
	}
	if refusal == nil || refusal.Range.Start.Line != 1 || !strings.Contains(refusal.Message, "needs an OpenAI-compatible endpoint") || !strings.Contains(refusal.Message, "--endpoint") {
		t.Fatalf("want a refusal on the model line, got %+v", got.Diagnostics)
	}
	from := c.count()
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"kmx": map[string]any{"endpoint": "http://127.0.0.1:11434/v1"}}})
	got, _ = c.diagnosticsFor(from, uri, 1)
	if len(got.Diagnostics) != 0 {
		t.Fatalf("with an endpoint nothing would be refused, got %+v", got.Diagnostics)
	}
}
