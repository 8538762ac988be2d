package lsp

import (
	"context"
	"encoding/json"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

type codeActionParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
	Range lspRange `json:"range"`
}

type textEdit struct {
	Range   lspRange `json:"range"`
	NewText string   `json:"newText"`
}

// workspaceEdit is an LSP WorkspaceEdit with text edits per document.
type workspaceEdit struct {
	Changes map[string][]textEdit `json:"changes"`
}

type codeAction struct {
	Title       string       `json:"title"`
	Kind        string       `json:"kind"`
	Diagnostics []diagnostic `json:"diagnostics,omitempty"`
	IsPreferred bool         `json:"isPreferred,omitempty"`
	Edit        any          `json:"edit"`
}

const kindQuickFix = "quickfix"

// codeAction offers agentfile's fixes whose range meets the requested one,
// each with the diagnostic it resolves, as gopls does. The edits are
// computed from the document's current text; a stale request is harmless
// because the client drops edits for an older version.
func (s *Server) codeAction(_ context.Context, raw json.RawMessage) (any, error) {
	var p codeActionParams
	if err := decode("textDocument/codeAction", raw, &p); err != nil {
		return nil, err
	}
	uri := p.TextDocument.URI
	snap, ok := s.docs.snapshot(uri)
	actions := []codeAction{}
	if !ok {
		return actions, nil
	}
	text, res := snap.text, snap.file()
	for _, f := range agentfile.FixesIn(fileIn(uri), text, res) {
		at := toLSPRange(f.Range)
		if !linesMeet(at, p.Range) {
			continue
		}
		var edit any = toWorkspaceEdit(uri, f.Edits)
		if f.Code == agentfile.CodeNoExamples {
			// Offer both homes, the sibling file first (see addExamplesHomes).
			for _, h := range s.addExamplesHomes(uri, text, res) {
				if h.Open == "" {
					continue
				}
				actions = append(actions, codeAction{Title: "Add examples in " + fileIn(h.Open), Kind: kindQuickFix, IsPreferred: true,
					Diagnostics: matching(res, f), Edit: h.Edit})
				f.Preferred = false
			}
		}
		a := codeAction{Title: f.Title, Kind: kindQuickFix, IsPreferred: f.Preferred, Edit: edit, Diagnostics: matching(res, f)}
		actions = append(actions, a)
	}
	return actions, nil
}

func toWorkspaceEdit(uri string, edits []agentfile.Edit) workspaceEdit {
	out := make([]textEdit, 0, len(edits))
	for _, e := range edits {
		out = append(out, textEdit{Range: toLSPRange(e.Range), NewText: e.NewText})
	}
	return workspaceEdit{Changes: map[string][]textEdit{uri: out}}
}

// linesMeet reports whether two ranges share a line: a lightbulb is asked
// for the cursor's line, and a fix belongs to every line it covers.
func linesMeet(a, b lspRange) bool {
	return a.Start.Line <= b.End.Line && b.Start.Line <= a.End.Line
}

// matching is the diagnostic a fix resolves, for its code action.
func matching(res agentfile.Result, f agentfile.Fix) []diagnostic {
	for _, d := range res.Diagnostics {
		if f.Code != "" && d.Code == f.Code && d.Range == f.Range {
			return toDiagnostics([]agentfile.Diagnostic{d})
		}
	}
	return nil
}
