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

// Issue 31 item 18: a saved examples file whose last example is
// mis-indented was "still being written" at 1:1, an Information. Opened as
// saved, or saved after typing, it is an Error on the mis-indented line;
// while the buffer has unsaved changes it stays "still being written".
func TestASavedExamplesFileWithAMisIndentedLastExampleIsAnErrorOnItsLine(t *testing.T) {
	agent := "---\nmodel: fake\n---\nReply with exactly `hello`\n"
	good := "- id: one\n  input: hi\n  assert:\n    - contains: hello\n"
	bad := good + " - id: two\n   input: hey\n"
	agentPath := writeAgent(t, "greet.agent.md", agent)
	examplesPath := filepath.Join(filepath.Dir(agentPath), "greet"+agentfile.ExamplesFileSuffix)
	if err := os.WriteFile(examplesPath, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	uri := fileURI(examplesPath)
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	misIndented := func(d publishedDiagnostics) bool {
		return len(d.Diagnostics) == 1 && d.Diagnostics[0].Code == agentfile.CodeYAMLSyntax && d.Diagnostics[0].Severity == 1 &&
			d.Diagnostics[0].Range.Start.Line == 4 && d.Diagnostics[0].Range.Start.Character == 1
	}

	// Opened as it is on disk: complete.
	c.open(uri, 1, bad)
	if d, _ := c.diagnosticsFor(0, uri, 1); !misIndented(d) {
		t.Fatalf("opened: %+v, want one Error KMX1001 at 5:2 (the ' - id: two' line)", d.Diagnostics)
	}

	// Typing: fixed, then broken again; unsaved, the break is unfinished.
	from := c.count()
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 2},
		"contentChanges": []map[string]any{{"text": good}}})
	c.diagnosticsFor(from, uri, 2)
	from = c.count()
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 3},
		"contentChanges": []map[string]any{{"text": bad}}})
	d, _ := c.diagnosticsFor(from, uri, 3)
	if len(d.Diagnostics) != 1 || d.Diagnostics[0].Code != agentfile.CodeUnfinished || d.Diagnostics[0].Severity != 3 {
		t.Fatalf("typed, unsaved: %+v, want one Information KMX1100 (still being written)", d.Diagnostics)
	}

	// Saved: complete again, the Error where the text is.
	from = c.count()
	c.notify("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": uri}})
	if d, _ := c.diagnosticsFor(from, uri, 3); !misIndented(d) {
		t.Fatalf("saved: %+v, want one Error KMX1001 at 5:2", d.Diagnostics)
	}
}
