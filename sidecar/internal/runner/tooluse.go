package runner

import (
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
)

// ToolSource is one called tool and the source that answered it.
type ToolSource struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// namedUses gives each use the name the agent file knows its tool by: a
// call names the function the model was offered (edit_editFiles), the
// report and the tool assertions name the tool (edit/editFiles) and the
// reference that declared it (edit).
func namedUses(uses []judge.ToolUse, set []localtools.Tool) []judge.ToolUse {
	out := make([]judge.ToolUse, 0, len(uses))
	for _, u := range uses {
		if t, ok := localtools.Find(set, u.Name); ok {
			u.Name, u.Reference = t.Name, t.Declared()
		}
		out = append(out, u)
	}
	return out
}

// recordToolUses fills an example's toolCalls (Enabled dispatches) and
// toolSources (each called tool's source, once per pair, Disabled answers
// left out) from a replay-verified trace.
func recordToolUses(res *ExampleResult, uses []judge.ToolUse) {
	seen := map[ToolSource]bool{}
	for _, u := range uses {
		if !u.Dispatched {
			continue
		}
		res.ToolCalls++
		ts := ToolSource{Name: u.Name, Source: u.Source}
		if !seen[ts] {
			seen[ts] = true
			res.ToolSources = append(res.ToolSources, ts)
		}
	}
}
