package runner

import "github.com/kmxdev/kmx/sidecar/internal/judge"

// ToolSource is one called tool and the source that answered it.
type ToolSource struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// recordToolUses fills an example's toolCalls (Enabled dispatches) and
// toolSources (each called tool's source, once per pair, Disabled answers
// left out) from a replay-verified trace.
func recordToolUses(res *ExampleResult, uses []ToolUse) {
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

// ToolUse is one answered call of a verified tool turn.
type ToolUse struct {
	Name       string
	Source     string
	Dispatched bool
}

func judgeUses(uses []ToolUse) []judge.ToolUse {
	out := make([]judge.ToolUse, 0, len(uses))
	for _, u := range uses {
		out = append(out, judge.ToolUse{Name: u.Name, Source: u.Source})
	}
	return out
}
