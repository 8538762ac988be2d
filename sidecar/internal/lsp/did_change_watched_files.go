package lsp

import (
	"context"
	"encoding/json"
	"path/filepath"
)

// settingsFileName is the tool settings file beside an agent file.
const settingsFileName = "kmx.yaml"

// didChangeWatchedFiles learns that a kmx.yaml was created, changed or
// deleted (the extension watches **/kmx.yaml). The open agent files beside
// it are diagnosed again (what a run would refuse, the kmx.yaml problems)
// and, when the client can, its code lenses are refreshed (they show each
// declared tool's state). Other files are ignored.
func (s *Server) didChangeWatchedFiles(ctx context.Context, raw json.RawMessage) (any, error) {
	var p didChangeWatchedFilesParams
	if err := decode("workspace/didChangeWatchedFiles", raw, &p); err != nil {
		return nil, nil
	}
	dirs := map[string]bool{}
	for _, c := range p.Changes {
		path := uriPath(c.URI)
		if path != "" && filepath.Base(path) == settingsFileName {
			dirs[filepath.Dir(path)] = true
		}
	}
	if len(dirs) == 0 {
		return nil, nil
	}
	var uris []string
	for _, uri := range s.docs.uris() {
		if path := uriPath(uri); path != "" && dirs[filepath.Dir(path)] {
			uris = append(uris, uri)
		}
	}
	for _, uri := range uris {
		s.diagnose(ctx, uri)
	}
	if len(uris) > 0 {
		s.refreshCodeLenses(ctx)
	}
	return nil, nil
}
