package lsp

import (
	"context"
	"os"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/english"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
)

// An agent's examples may live in NAME.agent.examples.yaml beside
// NAME.agent.md (agentfile.ParsePair). Either file may be open; each shows
// the diagnostics that are in it, lenses and code actions work in both,
// and a change to one re-checks the other when it is open. The file that
// is not open is read from disk.

// partnerURI returns the other file of a pair for an agent or examples
// file URI ("" for any other URI). The suffixes contain no character a
// file URI escapes, so the URI string converts directly.
func partnerURI(uri string) string {
	if a := agentfile.AgentPathOf(uri); a != "" {
		return a
	}
	return agentfile.SiblingExamplesPath(uri)
}

// isExamplesURI reports whether uri names a sibling examples file.
func isExamplesURI(uri string) bool { return agentfile.IsExamplesFile(uri) }

// fileIn is the Diagnostic.File value of the diagnostics that belong in
// the document uri: "" for the agent file, the base name for an examples
// file.
func fileIn(uri string) string {
	if !isExamplesURI(uri) {
		return ""
	}
	return uri[strings.LastIndex(uri, "/")+1:]
}

// readText reads the other file of a pair: the open buffer when the
// editor has it, else the file on disk (at most 8 MiB). It is the Read of
// every invocation.Request the server makes, so a run sees exactly the
// text the editor shows.
func (s *Server) readText(path string) ([]byte, error) {
	if snap, ok := s.docs.snapshotAt(path); ok {
		return append([]byte(nil), snap.text...), nil
	}
	return invocation.ReadPairFile(path)
}

// parsePair parses a document that is part of a pair; ok is false when
// it is an agent file without a sibling (parsed on its own, with its
// memo). An examples file whose agent file is missing is one Error.
func (s *Server) parsePair(snap snapshot) (agentfile.Result, bool) {
	path := uriPath(snap.uri)
	if path == "" {
		return agentfile.Result{}, false
	}
	if !isExamplesURI(snap.uri) {
		sibling := agentfile.SiblingExamplesPath(path)
		if sibling == "" || !s.exists(sibling) {
			return agentfile.Result{}, false
		}
	}
	typing := func(p string) bool {
		if p == path {
			return snap.dirty
		}
		other, ok := s.docs.snapshotAt(p)
		return ok && other.dirty
	}
	res, _, err := agentfile.ParseFileTyping(path, snap.text, s.readText, typing)
	if err != nil {
		return agentfile.Result{State: agentfile.Invalid, Diagnostics: []agentfile.Diagnostic{{
			File: fileIn(snap.uri), Severity: agentfile.SeverityError, Message: err.Error(),
		}}}, true
	}
	return res, true
}

// exists reports whether path is open in the editor or on disk.
func (s *Server) exists(path string) bool {
	if _, ok := s.docs.snapshotAt(path); ok {
		return true
	}
	_, err := os.Stat(path)
	return err == nil
}

// diagnosePartner re-checks the open partner of uri: its diagnostics
// depend on this file too.
func (s *Server) diagnosePartner(ctx context.Context, uri string) {
	other := partnerURI(uri)
	if other == "" {
		return
	}
	if s.docs.invalidate(other) {
		s.diagnose(ctx, other)
	}
}

// inFile keeps the diagnostics that are in the document uri.
func inFile(uri string, ds []agentfile.Diagnostic) []agentfile.Diagnostic {
	file := fileIn(uri)
	out := make([]agentfile.Diagnostic, 0, len(ds))
	for _, d := range ds {
		if d.File == file {
			out = append(out, d)
		}
	}
	return out
}

// addExamplesHomes are the places "Add examples" offers for an agent file
// with no examples (KMX2001): the sibling examples file first, since VS
// Code sends an agent's whole body, so examples in it reach the model; then
// an Examples section in the file itself.
func (s *Server) addExamplesHomes(uri string, text []byte, res agentfile.Result) []ExamplesHome {
	var homes []ExamplesHome
	for _, f := range agentfile.Fixes(text, res) {
		if f.Code != agentfile.CodeNoExamples {
			continue
		}
		if sibling := agentfile.SiblingExamplesPath(uri); sibling != "" {
			homes = append(homes, ExamplesHome{
				Title:  "In " + fileIn(sibling) + " beside this file (recommended)",
				Detail: "this file stays byte for byte what VS Code runs; kmx sends its whole body, as VS Code does",
				Edit:   createFileEdit(sibling, agentfile.ExamplesSkeleton()),
				Open:   sibling,
			})
		}
		homes = append(homes, ExamplesHome{
			Title:  "In this file, under ## Examples",
			Detail: "kmx sends only the text before ## Examples; VS Code sends the whole file, examples included",
			Edit:   toWorkspaceEdit(uri, f.Edits),
		})
	}
	return homes
}

// createFileEdit is a WorkspaceEdit that creates uri holding text; it
// fails, changing nothing, when the file exists.
func createFileEdit(uri, text string) map[string]any {
	return map[string]any{"documentChanges": []any{
		map[string]any{"kind": "create", "uri": uri, "options": map[string]any{"overwrite": false, "ignoreIfExists": false}},
		map[string]any{"textDocument": map[string]any{"uri": uri, "version": nil}, "edits": []textEdit{{NewText: text}}},
	}}
}

// plural is english.Plural, the one wording of a count every front shares.
func plural(n int, word string) string { return english.Plural(n, word) }
