package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

type codeLensParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
}

type lspCommand struct {
	Title     string `json:"title"`
	Command   string `json:"command"`
	Arguments []any  `json:"arguments,omitempty"`
}

type codeLens struct {
	Range   lspRange    `json:"range"`
	Command *lspCommand `json:"command,omitempty"`
}

// Lens titles, shared with the golden transcripts and the docs.
const (
	titleTestFile    = "▶ Test file"
	titleRunExample  = "▶ Run example"
	titleReplay      = "Replay last run"
	titleRegrade     = "Re-grade last run"
	titleOpenChat    = "💬 Open chat"
	titleAddExamples = "Add examples"
)

// codeLens returns "▶ Test file" above "## Examples" with each declared
// tool's state beside it (plain text lenses: no command, so no switch), and
// "▶ Run example" above each "- id:", "Re-grade last run" once a test of
// this file's agent finished, and "Replay last run" once a run of this
// file's agent is retained and no longer executing. Lenses appear even when the file has
// errors: their command then answers with the refusal.
func (s *Server) codeLens(ctx context.Context, raw json.RawMessage) (any, error) {
	var p codeLensParams
	if err := decode("textDocument/codeLens", raw, &p); err != nil {
		return nil, err
	}
	uri := p.TextDocument.URI
	snap, ok := s.docs.snapshot(uri)
	if !ok {
		return []codeLens{}, nil
	}
	text, res := snap.text, snap.file()
	if res.Agent == nil {
		return []codeLens{}, nil
	}
	a := res.Agent
	lenses := []codeLens{}
	// Open chat sits on the first line of the agent file: a conversation
	// needs no examples.
	if uriPath(uri) != "" && !isExamplesURI(uri) {
		lenses = append(lenses, codeLens{Range: toLSPRange(agentfile.Range{}), Command: &lspCommand{
			Title: titleOpenChat, Command: CommandOpenChat, Arguments: []any{ChatParams{URI: uri}},
		}})
	}
	// Where "Test file" goes: above "## Examples", or, with a sibling
	// examples file, on the first line of either file (the agent file
	// says how many examples its sibling holds).
	var testAt *lspRange
	title := titleTestFile
	switch {
	case a.ExamplesFile != "" && isExamplesURI(uri):
		testAt = &lspRange{}
	case a.ExamplesFile != "":
		testAt = &lspRange{}
		title = fmt.Sprintf("%s · %s in %s", titleTestFile, plural(len(a.Examples), "example"), a.ExamplesFile)
	case a.ExamplesHeading != nil:
		r := toLSPRange(*a.ExamplesHeading)
		testAt = &r
	}
	if testAt != nil {
		at := *testAt
		lenses = append(lenses, codeLens{Range: at, Command: &lspCommand{
			Title: title, Command: CommandTestFile, Arguments: []any{TestParams{URI: uri}},
		}})
		ts := readToolSettings(uriPath(uri), a.Tools)
		if ts.Error != "" {
			lenses = append(lenses, codeLens{Range: at, Command: &lspCommand{Title: "⚠ " + ts.Error}})
		}
		// Re-grade needs a finished test of this file's agent: its answers
		// are graded again with zero agent model calls (docs/regrade.md).
		if run := s.lastTestRun(a.ID, agentPathKey(uri)); run != "" {
			lenses = append(lenses, codeLens{Range: at, Command: &lspCommand{
				Title: titleRegrade, Command: CommandRegradeLastRun, Arguments: []any{TestParams{URI: uri, FromRun: run}},
			}})
		}
		if run := s.lastRun(a.ID, agentPathKey(uri)); run != "" {
			lenses = append(lenses, codeLens{Range: at, Command: &lspCommand{
				Title: titleReplay, Command: CommandInspectRun, Arguments: []any{InspectParams{RunID: run}},
			}})
		}
		if len(ts.States) > 0 {
			parts := make([]string, 0, len(ts.States))
			for _, st := range ts.States {
				parts = append(parts, fmt.Sprintf("%s: %s", st.Name, st.State))
			}
			lenses = append(lenses, codeLens{Range: at, Command: &lspCommand{Title: "tools: " + strings.Join(parts, ", ")}})
		}
	}
	if homes := s.addExamplesHomes(uri, text, res); len(homes) > 0 {
		lenses = append(lenses, codeLens{Range: lspRange{}, Command: &lspCommand{
			Title: titleAddExamples, Command: CommandAddExamples, Arguments: []any{AddExamplesParams{URI: uri, Homes: homes}},
		}})
	}
	if fileIn(uri) != a.ExamplesFile {
		return lenses, nil // the examples and their lenses are in the other file
	}
	for _, ex := range a.Examples {
		lenses = append(lenses, codeLens{Range: toLSPRange(ex.Range), Command: &lspCommand{
			Title: titleRunExample, Command: CommandRunExample, Arguments: []any{ExampleParams{URI: uri, ExampleID: ex.ID}},
		}})
	}
	return lenses, nil
}
