package lsp

import (
	"context"
	"encoding/json"
)

type didCloseParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
}

// didClose forgets the document and clears its diagnostics: once closed, a
// file's problems are not the editor's to show.
func (s *Server) didClose(ctx context.Context, raw json.RawMessage) (any, error) {
	var p didCloseParams
	if err := decode("textDocument/didClose", raw, &p); err != nil {
		return nil, nil
	}
	s.docs.close(p.TextDocument.URI, func() {
		s.notify(ctx, "textDocument/publishDiagnostics", &publishDiagnosticsParams{URI: p.TextDocument.URI, Diagnostics: []diagnostic{}})
	})
	// The partner now reads this file from disk.
	s.diagnosePartner(ctx, p.TextDocument.URI)
	return nil, nil
}

type didSaveParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
}

// didSave re-checks the saved document (and its open partner): a saved
// examples file is complete, so YAML cut at its end is no longer "still
// being written" but an Error where it stops parsing. Otherwise
// diagnostics follow the buffer, not the disk.
func (s *Server) didSave(ctx context.Context, raw json.RawMessage) (any, error) {
	var p didSaveParams
	if err := decode("textDocument/didSave", raw, &p); err != nil {
		return nil, nil
	}
	if s.docs.saved(p.TextDocument.URI) {
		s.diagnose(ctx, p.TextDocument.URI)
		s.diagnosePartner(ctx, p.TextDocument.URI)
	}
	return nil, nil
}
