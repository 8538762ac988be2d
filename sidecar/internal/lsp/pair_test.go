package lsp_test

import (
	"path/filepath"
	"strings"
	"testing"

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
