package lsp

import (
	"context"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
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

// diagnose publishes the diagnostics of the current version of uri, off
// the ordered queue, at most one parse per document at a time (see
// store.check).
func (s *Server) diagnose(ctx context.Context, uri string) {
	s.docs.check(uri, func(snap snapshot) {
		res := s.safeParse(snap)
		s.publish(ctx, snap, res, s.preflight(ctx, snap, res))
	})
}

// preflight is what Run and Test of this version would refuse under the
// current settings (invocation.Preflight): diagnostics on the causing
// line, code kmx-refusal, with zero model calls. A panic there is a kmx bug
// and costs only these diagnostics.
func (s *Server) preflight(ctx context.Context, snap snapshot, res agentfile.Result) (out []agentfile.Diagnostic) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("preflight panicked; this is a kmx bug", "uri", snap.uri, "panic", fmt.Sprint(p))
			out = nil
		}
	}()
	path := uriPath(snap.uri)
	if path == "" {
		path = snap.uri
	}
	src := snap.text
	if isExamplesURI(snap.uri) {
		// The pair's refusals are the agent's: check them with the agent
		// file's text; publish keeps those in this file.
		path = agentfile.AgentPathOf(path)
		text, err := s.readText(path)
		if err != nil {
			return nil
		}
		src = text
	}
	return invocation.Preflight(ctx, s.previewOptions("").Options, path, src, res)
}

// safeParse parses snap; a parser panic (a kmx bug) becomes one Warning
// saying the text was not checked, instead of killing the sidecar. It is a
// Warning, not an Error, because nothing is known to be wrong with the text.
func (s *Server) safeParse(snap snapshot) (res agentfile.Result) {
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
func (s *Server) parseDoc(snap snapshot) agentfile.Result {
	if res, ok := s.parsePair(snap); ok {
		return res
	}
	if s.opts.Parse == nil && snap.parser != nil {
		return snap.parser.Parse(uriPath(snap.uri), snap.text)
	}
	return s.parse(uriPath(snap.uri), snap.text)
}

// publish sends the diagnostics of snap if, at publish time, snap is still
// the newest version of an open document (store.publish), so an older
// result can never follow a newer one.
func (s *Server) publish(ctx context.Context, snap snapshot, res agentfile.Result, refusals []agentfile.Diagnostic) {
	sent := s.docs.publish(snap, res, func() {
		v := snap.version
		diags := toDiagnostics(inFile(snap.uri, res.Diagnostics))
		onYAML, onAgent, publishYAML := settingsDiagnostics(uriPath(snap.uri), res.Agent)
		if onAgent != nil && !isExamplesURI(snap.uri) {
			diags = append(diags, *onAgent)
		}
		// What a run would refuse under the settings (kmx-refusal), in
		// the file of the pair the cause is in. An unusable kmx.yaml is
		// already the Error above: not twice.
		for _, d := range toDiagnostics(inFile(snap.uri, refusals)) {
			if onAgent == nil || d.Code != codeKmxYAML {
				diags = append(diags, d)
			}
		}
		s.notify(ctx, "textDocument/publishDiagnostics", &publishDiagnosticsParams{
			URI:         snap.uri,
			Version:     &v,
			Diagnostics: diags,
		})
		if publishYAML {
			s.publishSettings(ctx, snap.uri, onYAML)
		}
	})
	if !sent {
		s.log.Debug("stale diagnostics dropped", "uri", snap.uri, "version", snap.version)
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
