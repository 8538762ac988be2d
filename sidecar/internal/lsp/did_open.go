package lsp

import (
	"context"
	"encoding/json"
)

type didOpenParams struct {
	TextDocument struct {
		URI        string `json:"uri"`
		LanguageID string `json:"languageId"`
		Version    int32  `json:"version"`
		Text       string `json:"text"`
	} `json:"textDocument"`
}

// didOpen stores the document and publishes its diagnostics.
func (s *Server) didOpen(ctx context.Context, raw json.RawMessage) (any, error) {
	var p didOpenParams
	if err := decode("textDocument/didOpen", raw, &p); err != nil {
		s.log.Warn("didOpen ignored", "err", err)
		return nil, nil
	}
	td := p.TextDocument
	s.docs.open(td.URI, td.Version, []byte(td.Text))
	s.diagnose(ctx, td.URI)
	s.diagnosePartner(ctx, td.URI)
	return nil, nil
}
