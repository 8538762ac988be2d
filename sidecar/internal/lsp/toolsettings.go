package lsp

import (
	"errors"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
)

// readToolSettings reads kmx.yaml beside the agent file (never a parent
// folder or the workspace) through localtools, the same strict reader the
// runner refuses with, and returns each declared tool's state for display.
// When kmx.yaml cannot be used, Error says why and Run/Test are refused by
// the runner with the same words.
func readToolSettings(agentPath string, tools []agentfile.Tool) ToolSettings {
	out := ToolSettings{States: []ToolState{}}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	settings, err := localtools.ReadSettings(agentPath, names)
	if err != nil {
		var se *localtools.SettingsError
		if errors.As(err, &se) {
			out.Error = se.Short() + "; Run and Test are refused until kmx.yaml is fixed"
		} else {
			out.Error = "kmx.yaml cannot be read; fix its permissions or remove it"
		}
		return out
	}
	for i, st := range settings.States {
		out.States = append(out.States, ToolState{Name: st.Name, State: st.State, Range: tools[i].Range})
	}
	out.Revision = settings.Revision()
	return out
}
