package lsp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

const pairAgent = "---\nname: Code Reviewer\nmodel: fake\ntools: ['github/*']\n---\nYou review changes.\n\nReply with exactly `Review:` followed by the input\n"

// TestAddExamplesOffersTheSiblingFirst: an agent with no examples gets the
// Add examples lens with both homes, the sibling file first.
func TestAddExamplesOffersTheSiblingFirst(t *testing.T) {
	path := writeAgent(t, "plain.agent.md", pairAgent)
	uri := fileURI(path)
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	from := c.count()
	c.open(uri, 1, pairAgent)
	c.diagnosticsFor(from, uri, 1)
	var lenses []struct {
		Command struct {
			Title     string                  `json:"title"`
			Command   string                  `json:"command"`
			Arguments []lsp.AddExamplesParams `json:"arguments"`
		} `json:"command"`
	}
	c.mustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": uri}}, &lenses)
	if len(lenses) != 2 || lenses[1].Command.Command != lsp.CommandAddExamples {
		t.Fatalf("lenses = %+v", lenses)
	}
	homes := lenses[1].Command.Arguments[0].Homes
	if len(homes) != 2 || homes[0].Open != fileURI(filepath.Join(filepath.Dir(path), "plain.agent.examples.yaml")) || !strings.HasPrefix(homes[1].Title, "In this file") {
		t.Errorf("homes = %+v", homes)
	}
}

// TestPairRefusalsAreShownInTheFileThatCausesThem: a pair whose example
// has no recording for the tool the fake would call shows no refusal in
// either file (the call answers the stub), and nothing of the examples file
// lands on the agent file.
func TestPairRefusalsAreShownInTheFileThatCausesThem(t *testing.T) {
	agent := "---\nmodel: fake\ntools: [todo]\n---\nCall the tool `todo`\n"
	examples := "# one\n- id: one\n  input: hi\n  assert:\n    - toolCalled: todo\n"
	agentPath := writeAgent(t, "caller.agent.md", agent)
	examplesPath := filepath.Join(filepath.Dir(agentPath), "caller"+agentfile.ExamplesFileSuffix)
	if err := os.WriteFile(examplesPath, []byte(examples), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	agentURI, examplesURI := fileURI(agentPath), fileURI(examplesPath)
	c.open(agentURI, 1, agent)
	d, _ := c.diagnosticsFor(0, agentURI, 1)
	if len(d.Diagnostics) != 0 {
		t.Errorf("agent file diagnostics = %+v, want none (the cause is in the examples file)", d.Diagnostics)
	}
	from := c.count()
	c.open(examplesURI, 1, examples)
	d, _ = c.diagnosticsFor(from, examplesURI, 1)
	// An example with no recording for the tool the fake calls is not
	// refused: the call answers "not available in this test".
	if len(d.Diagnostics) != 0 {
		t.Errorf("examples file diagnostics = %+v, want none (an unrecorded call is stubbed, not refused)", d.Diagnostics)
	}
}
