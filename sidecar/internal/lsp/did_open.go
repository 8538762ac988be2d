package lsp

import (
	"context"
	"encoding/json"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
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
	doc := &document{uri: td.URI, version: td.Version, text: []byte(td.Text), parser: &agentfile.Parser{}}
	s.mu.Lock()
	s.docs[td.URI] = doc
	s.mu.Unlock()
	s.diagnose(ctx, td.URI)
	s.diagnosePartner(ctx, td.URI)
	return nil, nil
}
