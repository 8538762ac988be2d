package lsp

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
)

// codeKmxYAML is the diagnostic code of an unusable kmx.yaml.
const codeKmxYAML = invocation.CodeSettings

// settingsURI is the URI of the kmx.yaml beside the agent file at uri.
func settingsURI(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return "", false
	}
	u.Path = path.Join(path.Dir(u.Path), localtools.SettingsFile)
	u.RawPath = ""
	return u.String(), true
}

// settingsDiagnostics checks kmx.yaml beside an agent file with the same
// strict reader the runner refuses with. It returns the diagnostics to
// publish on kmx.yaml itself and the refusal to add to the agent file
// (nil when kmx.yaml is usable or absent). publishYAML is false when there
// is nothing to say about kmx.yaml (no file and no tools declared).
func settingsDiagnostics(agentPath string, a *agentfile.Agent) (onYAML []diagnostic, onAgent *diagnostic, publishYAML bool) {
	if agentPath == "" || a == nil {
		return nil, nil, false
	}
	names := make([]string, 0, len(a.Tools))
	for _, t := range a.Tools {
		names = append(names, t.Name)
	}
	_, statErr := os.Lstat(localtools.SettingsPath(agentPath))
	exists := statErr == nil
	if !exists && len(names) == 0 {
		return nil, nil, false
	}
	_, err := localtools.ReadSettings(agentPath, names)
	var se *localtools.SettingsError
	if !errors.As(err, &se) {
		return []diagnostic{}, nil, exists
	}
	line, col := 0, 0
	if se.Line > 0 {
		line, col = se.Line-1, se.Column-1
	}
	onYAML = []diagnostic{{
		Range:    lspRange{Start: lspPosition{Line: uint32(line), Character: uint32(col)}, End: lspPosition{Line: uint32(line), Character: uint32(col + 1)}},
		Severity: int(agentfile.SeverityError),
		Code:     codeKmxYAML,
		Source:   "kmx",
		Message:  se.Problem + "; " + se.NextStep(),
	}}
	at := lspRange{}
	if len(a.Tools) > 0 {
		at = toLSPRange(a.Tools[0].Range)
	}
	onAgent = &diagnostic{
		Range:    at,
		Severity: int(agentfile.SeverityError),
		Code:     codeKmxYAML,
		Source:   "kmx",
		Message:  "Run and Test are refused: " + se.Short() + "; fix kmx.yaml beside this file, or remove it",
	}
	return onYAML, onAgent, true
}

// publishSettings publishes kmx.yaml's own diagnostics (version-less: it is
// not an open document kmx tracks).
func (s *Server) publishSettings(ctx context.Context, agentURI string, diags []diagnostic) {
	uri, ok := settingsURI(agentURI)
	if !ok {
		return
	}
	s.notify(ctx, "textDocument/publishDiagnostics", &publishDiagnosticsParams{URI: uri, Diagnostics: diags})
}
