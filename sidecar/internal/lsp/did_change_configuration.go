package lsp

import (
	"context"
	"encoding/json"
)

// didChangeConfigurationParams is workspace/didChangeConfiguration with
// the kmx section typed.
type didChangeConfigurationParams struct {
	Settings ConfigurationSettings `json:"settings"`
}

// didChangeConfiguration replaces the settings with the "kmx" section the
// client sent, unless it is refused (then the old settings stay).
func (s *Server) didChangeConfiguration(ctx context.Context, raw json.RawMessage) (any, error) {
	var p didChangeConfigurationParams
	if err := decode("workspace/didChangeConfiguration", raw, &p); err != nil {
		s.refuseSettings(ctx, "workspace/didChangeConfiguration", "the kmx section is not a settings object: "+err.Error())
		return nil, nil
	}
	if p.Settings.Kmx == nil {
		return nil, nil
	}
	if problem := checkSettings(*p.Settings.Kmx); problem != "" {
		s.refuseSettings(ctx, "workspace/didChangeConfiguration", problem)
		return nil, nil
	}
	s.setSettings(*p.Settings.Kmx)
	s.log.Info("settings changed")
	// What a run would refuse depends on the settings: check again.
	for _, uri := range s.docs.uris() {
		s.diagnose(ctx, uri)
	}
	return nil, nil
}
