package lsp

import (
	"context"
	"encoding/json"
	"errors"
)

type didChangeParams struct {
	TextDocument struct {
		URI     string `json:"uri"`
		Version int32  `json:"version"`
	} `json:"textDocument"`
	ContentChanges []contentChange `json:"contentChanges"`
}

// didChange applies full or incremental changes (ranges in UTF-16 code
// units) and publishes diagnostics for the new version. A change that does
// not fit the text we hold means the client and server disagree: the
// document is dropped and the user is told to reopen it, rather than
// diagnosing text the user does not see.
func (s *Server) didChange(ctx context.Context, raw json.RawMessage) (any, error) {
	var p didChangeParams
	if err := decode("textDocument/didChange", raw, &p); err != nil {
		s.log.Warn("didChange ignored", "err", err)
		return nil, nil
	}
	uri := p.TextDocument.URI
	switch err := s.docs.change(uri, p.TextDocument.Version, p.ContentChanges); {
	case errors.Is(err, errNotOpen):
		s.log.Warn("didChange for a document that is not open", "uri", uri)
		return nil, nil
	case err != nil:
		s.log.Error("change does not apply; document dropped", "uri", uri, "err", err)
		s.notify(ctx, "window/showMessage", &showMessageParams{
			Type:    messageTypeError,
			Message: "kmx lost track of " + uri + " (" + err.Error() + "); close and reopen the file",
		})
		return nil, nil
	}
	s.diagnose(ctx, uri)
	s.diagnosePartner(ctx, uri)
	return nil, nil
}
