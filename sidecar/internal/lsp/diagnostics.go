package lsp

import (
	"context"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/localpreview"
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

// diagnose publishes the diagnostics of the current version of uri. At
// most one parse per document runs at a time, off the ordered queue: a
// change that arrives while one runs marks the document pending, and the
// running parse then starts again on the newest text. So typing into a
// large file never queues a parse per keystroke, and the last version is
// always the one diagnosed.
func (s *Server) diagnose(ctx context.Context, uri string) {
	s.mu.Lock()
	doc, ok := s.docs[uri]
	if !ok {
		s.mu.Unlock()
		return
	}
	if doc.parsing {
		doc.pending = true
		s.mu.Unlock()
		return
	}
	doc.parsing = true
	snap := *doc
	s.mu.Unlock()
	go s.diagnoseLoop(ctx, doc, snap)
}

func (s *Server) diagnoseLoop(ctx context.Context, doc *document, snap document) {
	for {
		res := s.safeParse(snap)
		s.publish(ctx, snap, res, s.preflight(ctx, snap, res))
		s.mu.Lock()
		if s.docs[snap.uri] != doc || !doc.pending {
			// Closed (or reopened, which diagnoses itself), or nothing newer.
			doc.parsing = false
			s.mu.Unlock()
			return
		}
		doc.pending = false
		snap = *doc
		s.mu.Unlock()
	}
}

// preflight is what Run and Test of this version would refuse under the
// current settings (localpreview.Preflight): diagnostics on the causing
// line, code kmx-refusal, with zero model calls. A panic there is a kmx bug
// and costs only these diagnostics.
func (s *Server) preflight(ctx context.Context, snap document, res agentfile.Result) (out []agentfile.Diagnostic) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("preflight panicked; this is a kmx bug", "uri", snap.uri, "panic", fmt.Sprint(p))
			out = nil
		}
	}()
	if isExamplesURI(snap.uri) {
		return nil
	}
	path := uriPath(snap.uri)
	if path == "" {
		path = snap.uri
	}
	return localpreview.Preflight(ctx, s.previewOptions(""), path, snap.text, res)
}

// safeParse parses snap; a parser panic (a kmx bug) becomes one Warning
// saying the text was not checked, instead of killing the sidecar. It is a
// Warning, not an Error, because nothing is known to be wrong with the text.
func (s *Server) safeParse(snap document) (res agentfile.Result) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("parser panicked; this is a kmx bug", "uri", snap.uri, "panic", fmt.Sprint(p))
			res = agentfile.Result{State: agentfile.Invalid, Diagnostics: []agentfile.Diagnostic{{
				Severity: agentfile.SeverityWarning,
				Code:     "kmx-internal",
				Message:  "kmx could not check this text (an internal error, logged in the kmx output channel); runs are refused until it can",
			}}}
		}
	}()
	return s.parseDoc(snap)
}

// parseDoc parses a snapshot with its document's Parser, which re-checks
// only the examples a change touched and returns what agentfile.Parse
// would; Options.Parse, when a test sets it, replaces both.
func (s *Server) parseDoc(snap document) agentfile.Result {
	if res, ok := s.parsePair(snap); ok {
		return res
	}
	if s.opts.Parse == nil && snap.parser != nil {
		return snap.parser.Parse(uriPath(snap.uri), snap.text)
	}
	return s.parse(uriPath(snap.uri), snap.text)
}

// publish sends the diagnostics of snap if, at publish time, snap is still
// the newest version of an open document. The check and the send are one
// step under publishMu, so an older result can never follow a newer one.
func (s *Server) publish(ctx context.Context, snap document, res agentfile.Result, refusals []agentfile.Diagnostic) {
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
	diags := toDiagnostics(inFile(snap.uri, res.Diagnostics))
	onYAML, onAgent, publishYAML := settingsDiagnostics(uriPath(snap.uri), res.Agent)
	if onAgent != nil && !isExamplesURI(snap.uri) {
		diags = append(diags, *onAgent)
	}
	if !isExamplesURI(snap.uri) {
		// What a run would refuse under the settings (kmx-refusal).
		diags = append(diags, toDiagnostics(refusals)...)
	}
	s.notify(ctx, "textDocument/publishDiagnostics", &publishDiagnosticsParams{
		URI:         snap.uri,
		Version:     &v,
		Diagnostics: diags,
	})
	if publishYAML {
		s.publishSettings(ctx, snap.uri, onYAML)
	}
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
