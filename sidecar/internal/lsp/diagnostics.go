package lsp

import (
	"context"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

// diagnostic is an LSP Diagnostic. Declared here (not protocol.Diagnostic)
// so the version-checked publish path owns its exact JSON shape.
type diagnostic struct {
	Range    lspRange `json:"range"`
	Severity int      `json:"severity"`
	Code     string   `json:"code,omitempty"`
	Source   string   `json:"source"`
	Message  string   `json:"message"`
}

type publishDiagnosticsParams struct {
	URI         string       `json:"uri"`
	Version     *int32       `json:"version,omitempty"`
	Diagnostics []diagnostic `json:"diagnostics"`
}

// diagnose parses a snapshot off the ordered queue and publishes its
// diagnostics if, at publish time, it is still the newest version of an
// open document. Parsing is a pure function of the text, so a slow parse of
// an older version is simply dropped.
func (s *Server) diagnose(ctx context.Context, snap document) {
	go func() {
		if !s.isCurrent(snap.uri, snap.version) {
			return
		}
		res := s.parse(uriPath(snap.uri), snap.text)
		s.publishMu.Lock()
		defer s.publishMu.Unlock()
		s.mu.Lock()
		doc, ok := s.docs[snap.uri]
		current := ok && doc.version == snap.version
		if current {
			doc.result = &res
		}
		s.mu.Unlock()
		if !current {
			s.log.Debug("stale diagnostics dropped", "uri", snap.uri, "version", snap.version)
			return
		}
		v := snap.version
		s.notify(ctx, "textDocument/publishDiagnostics", &publishDiagnosticsParams{
			URI:         snap.uri,
			Version:     &v,
			Diagnostics: toDiagnostics(res.Diagnostics),
		})
	}()
}

func (s *Server) isCurrent(uri string, version int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, ok := s.docs[uri]
	return ok && doc.version == version
}

func toDiagnostics(ds []agentfile.Diagnostic) []diagnostic {
	out := make([]diagnostic, 0, len(ds))
	for _, d := range ds {
		out = append(out, diagnostic{
			Range:    toLSPRange(d.Range),
			Severity: int(d.Severity),
			Code:     d.Code,
			Source:   "kmx",
			Message:  d.Message,
		})
	}
	return out
}

func toLSPRange(r agentfile.Range) lspRange {
	return lspRange{
		Start: lspPosition{Line: uint32(r.Start.Line), Character: uint32(r.Start.Character)},
		End:   lspPosition{Line: uint32(r.End.Line), Character: uint32(r.End.Character)},
	}
}
