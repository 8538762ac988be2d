package lsp

// capture.go turns a run's capture (the runner returns it as an edit in
// the editor: Options.CaptureAsEdit) into the WorkspaceEdit the extension
// applies, so that Undo takes it back. The sidecar never writes the file
// itself here.

import (
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// textDocumentEdit is an LSP TextDocumentEdit: with a version, the client
// refuses the edit when the document has changed since.
type textDocumentEdit struct {
	TextDocument versionedDocument `json:"textDocument"`
	Edits        []textEdit        `json:"edits"`
}

type versionedDocument struct {
	URI string `json:"uri"`
	// Version is the open document's version the edit was computed
	// against; null for a file that is not open.
	Version *int32 `json:"version"`
}

// captureWorkspaceEdit is the capture as an LSP WorkspaceEdit.
type captureWorkspaceEdit struct {
	DocumentChanges []textDocumentEdit `json:"documentChanges"`
}

// captureEdit builds the WorkspaceEdit of a run's capture, or refuses it
// (in the report, which then withholds full success) when the document the
// run read has changed since the run started.
func (s *Server) captureEdit(uri string, src source, rep *runner.Report) *captureWorkspaceEdit {
	c := rep.Capture
	if c == nil || c.Status != runner.CaptureEdit {
		return nil
	}
	if snap, ok := s.docs.snapshot(uri); src.version > 0 && (!ok || snap.version != src.version) {
		c.Status, c.Edits = runner.CaptureRefused, nil
		c.Message = "the file changed since the run started; the captured recording was not applied"
		c.Next = "run again to capture into the current text"
		if rep.Verdict == runner.VerdictPass {
			rep.Verdict = runner.VerdictUnknown
		}
		return nil
	}
	target, version := uri, &src.version
	if c.Path != src.path {
		// The other file of the pair holds the examples.
		target, version = partnerURI(uri), nil
		if snap, ok := s.docs.snapshot(target); ok {
			v := snap.version
			version = &v
		}
	} else if src.version == 0 {
		version = nil
	}
	tde := textDocumentEdit{TextDocument: versionedDocument{URI: target, Version: version}}
	for _, e := range c.Edits {
		tde.Edits = append(tde.Edits, textEdit{Range: toLSPRange(e.Range), NewText: e.NewText})
	}
	return &captureWorkspaceEdit{DocumentChanges: []textDocumentEdit{tde}}
}
