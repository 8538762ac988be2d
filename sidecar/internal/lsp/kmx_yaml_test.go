package lsp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

// TestKmxYAMLProblemsAreDiagnostics: an unusable kmx.yaml is reported on
// kmx.yaml itself (where the problem is) and as a refusal on the agent file.
func TestKmxYAMLProblemsAreDiagnostics(t *testing.T) {
	path := writeAgent(t, "x.agent.md", withTools)
	settings := filepath.Join(filepath.Dir(path), "kmx.yaml")
	if err := os.WriteFile(settings, []byte("tools:\n  ping: Ask\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	uri := fileURI(path)
	c.open(uri, 1, withTools)
	got, _ := c.diagnosticsFor(0, uri, 1)
	var refusal bool
	for _, d := range got.Diagnostics {
		if d.Code == "kmx-yaml" && d.Severity == 1 && strings.Contains(d.Message, "Run and Test are refused") && strings.Contains(d.Message, "Ask") {
			refusal = true
		}
	}
	if !refusal {
		t.Errorf("agent file diagnostics lack the kmx.yaml refusal: %+v", got.Diagnostics)
	}
	yamlURI := fileURI(settings)
	m, _ := c.waitMessage(0, "textDocument/publishDiagnostics", func(raw json.RawMessage) bool {
		var p struct{ URI string }
		return json.Unmarshal(raw, &p) == nil && p.URI == yamlURI
	})
	var onYAML struct {
		Diagnostics []struct {
			Range struct {
				Start struct{ Line, Character int }
			}
			Code, Message string
		}
	}
	if err := json.Unmarshal(m.Params, &onYAML); err != nil {
		t.Fatal(err)
	}
	if len(onYAML.Diagnostics) != 1 || onYAML.Diagnostics[0].Range.Start.Line != 1 || !strings.Contains(onYAML.Diagnostics[0].Message, "Ask, which is not supported yet") {
		t.Errorf("kmx.yaml diagnostics = %+v", onYAML.Diagnostics)
	}
}
