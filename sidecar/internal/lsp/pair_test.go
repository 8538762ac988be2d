package lsp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

const pairAgent = "---\nname: Code Reviewer\nmodel: fake\ntools: ['github/*']\n---\nYou review changes.\n\nReply with exactly `Review:` followed by the input\n"

const pairExamples = "# kept out of the prompt\n- id: short\n  input: Rename a variable\n  assert:\n    - contains: \"Review: Rename\"\n- id: long\n  input: Fix the login bug\n  assert: [regex: \"^Review: Fix\"]\n"

func lensTitles(c *client, uri string) []string {
	var out []string
	for _, l := range c.lenses(uri) {
		if l.Command != nil {
			out = append(out, l.Command.Title)
		}
	}
	return out
}

// TestExamplesBesideTheAgent: with reviewer.agent.examples.yaml beside the
// agent, each file shows its own diagnostics and lenses, the Test Explorer
// gets the examples with the examples file's URI, an example runs from
// either file with the agent's whole body as instructions, and an Examples
// section added to the agent file is refused in the agent file.
func TestExamplesBesideTheAgent(t *testing.T) {
	agentPath := writeAgent(t, "reviewer.agent.md", pairAgent)
	examplesPath := filepath.Join(filepath.Dir(agentPath), "reviewer.agent.examples.yaml")
	if err := os.WriteFile(examplesPath, []byte(pairExamples), 0o600); err != nil {
		t.Fatal(err)
	}
	agentURI, examplesURI := fileURI(agentPath), fileURI(examplesPath)
	c := startServer(t, lsp.Options{})
	c.initialize(nil)

	from := c.count()
	c.open(agentURI, 1, pairAgent)
	if d, _ := c.diagnosticsFor(from, agentURI, 1); len(d.Diagnostics) != 0 {
		t.Fatalf("agent file diagnostics = %+v (no KMX2001: its examples are beside it)", d.Diagnostics)
	}
	if got := strings.Join(lensTitles(c, agentURI), "|"); got != "💬 Open chat|▶ Test file · 2 examples in reviewer.agent.examples.yaml|tools: github/*: Enabled" {
		t.Errorf("agent file lenses = %q", got)
	}

	// The examples file, open and unsaved, is what runs.
	edited := strings.Replace(pairExamples, "Rename a variable", "Rename a field", 1)
	from = c.count()
	c.open(examplesURI, 1, edited)
	c.diagnosticsFor(from, examplesURI, 1)
	if got := strings.Join(lensTitles(c, examplesURI), "|"); got != "▶ Test file|tools: github/*: Enabled|▶ Run example|▶ Run example" {
		t.Errorf("examples file lenses = %q", got)
	}
	var ex lsp.ExamplesResult
	c.mustCall(lsp.MethodExamples, lsp.DocumentParams{URI: agentURI}, &ex)
	if ex.ExamplesURI != examplesURI || len(ex.Examples) != 2 || ex.Examples[0].Range.Start.Line != 1 || ex.AgentName != "Code Reviewer" {
		t.Fatalf("kmx/examples of the agent file = %+v", ex)
	}

	for _, uri := range []string{agentURI, examplesURI} {
		var res lsp.ReportResult
		c.mustCall(lsp.MethodRun, lsp.ExampleParams{URI: uri, ExampleID: "short"}, &res)
		rep := res.Report
		if rep.Agent.Path != agentPath || rep.Agent.ExamplesPath != examplesPath || len(rep.Examples) != 1 {
			t.Fatalf("run from %s: agent %+v", uri, rep.Agent)
		}
		if got := rep.Examples[0]; got.Verdict != "pass" || got.Answer == nil || *got.Answer != "Review: Rename a field" {
			t.Errorf("run from %s: %+v", uri, got)
		}
	}

	// An Examples section in the agent file as well: refused there.
	withSection := pairAgent + "\n## Examples\n\n```yaml\n- id: x\n  input: y\n```\n"
	from = c.count()
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": agentURI, "version": 2},
		"contentChanges": []any{map[string]any{"text": withSection}},
	})
	d, _ := c.diagnosticsFor(from, agentURI, 2)
	if len(d.Diagnostics) != 1 || d.Diagnostics[0].Code != "KMX2012" || d.Diagnostics[0].Range.Start.Line != 9 {
		t.Errorf("agent file diagnostics = %+v, want KMX2012 at the heading", d.Diagnostics)
	}

	// A duplicate id in the examples file: shown there, with its fix.
	dup := strings.Replace(edited, "id: long", "id: short", 1) + "- id: third\n  input: x\n  assert: [contains: x]\n"
	from = c.count()
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": examplesURI, "version": 2},
		"contentChanges": []any{map[string]any{"text": dup}},
	})
	d, _ = c.diagnosticsFor(from, examplesURI, 2)
	if len(d.Diagnostics) != 1 || d.Diagnostics[0].Code != "KMX2008" || d.Diagnostics[0].Range.Start.Line != 5 || d.Diagnostics[0].Severity != 1 {
		t.Errorf("examples file diagnostics = %+v, want one Error KMX2008 on line 6 (the file is whole YAML: nothing is waiting)", d.Diagnostics)
	}
	var actions []struct {
		Title string `json:"title"`
	}
	c.mustCall("textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": examplesURI}, "range": rng(5, 0, 5, 0), "context": map[string]any{"diagnostics": []any{}}}, &actions)
	if len(actions) != 1 || actions[0].Title != "Rename this example to `short-2`" {
		t.Errorf("code actions = %+v", actions)
	}
}

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
