package runner

import (
	"fmt"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
)

// ToolSummary is a run's tools in a few figures: what the CLI's tools: line
// and JUnit's tools property say, instead of one entry per declared tool
// (a real agent declares 30 or more). The report's toolSettings keeps
// every name and state.
type ToolSummary struct {
	// Declared counts the names the header declares; Disabled lists those
	// kmx.yaml disables, in declaration order.
	Declared int      `json:"declared"`
	Disabled []string `json:"disabled,omitempty"`
	// Offered counts the distinct tools the examples were offered (a
	// declared set such as `edit` offers several).
	Offered int `json:"offered"`
	// Sources counts the offered tools by what answers their calls, each
	// tool once, by the most real source any example gives it: live,
	// workspace, recorded, unavailable (the stub "not available in this
	// test"), disabled.
	Sources map[string]int `json:"sources,omitempty"`
}

// sourceRank orders the sources from the most real answer to none.
var sourceRank = []string{localtools.SourceLive, localtools.SourceWorkspace, localtools.SourceRecorded, localtools.SourceUnavailable, localtools.SourceDisabled}

// summarizeTools makes the summary of the plan's tools; nil when the file
// declares none.
func summarizeTools(plan *invocation.Plan) *ToolSummary {
	settings := plan.ToolSettings()
	if len(settings) == 0 {
		return nil
	}
	s := &ToolSummary{Declared: len(settings), Sources: map[string]int{}}
	for _, st := range settings {
		if st.State == localtools.Disabled {
			s.Disabled = append(s.Disabled, st.Name)
		}
	}
	rank := func(src string) int {
		for i, r := range sourceRank {
			if r == src {
				return i
			}
		}
		return len(sourceRank)
	}
	best := map[string]string{}
	var order []string
	for _, ex := range plan.Selected {
		for _, t := range plan.Tools(ex.ID) {
			cur, seen := best[t.Name]
			if !seen {
				order = append(order, t.Name)
			}
			if !seen || rank(t.Source) < rank(cur) {
				best[t.Name] = t.Source
			}
		}
	}
	s.Offered = len(order)
	for _, name := range order {
		s.Sources[best[name]]++
	}
	if len(s.Sources) == 0 {
		s.Sources = nil
	}
	return s
}

// maxNamedDisabled bounds the disabled tools the line names.
const maxNamedDisabled = 5

// Line is the summary in one line, e.g. "tools: 32 declared, 2 disabled in
// kmx.yaml (a, b) · 35 offered: 3 recorded, 32 unavailable (answered
// "not available in this test")".
func (s *ToolSummary) Line() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tools: %d declared", s.Declared)
	switch n := len(s.Disabled); {
	case n == 0:
		b.WriteString(", none disabled")
	case n == s.Declared:
		b.WriteString(", all disabled in kmx.yaml")
	default:
		names := s.Disabled
		more := ""
		if n > maxNamedDisabled {
			names, more = names[:maxNamedDisabled], fmt.Sprintf(", %d more", n-maxNamedDisabled)
		}
		fmt.Fprintf(&b, ", %d disabled in kmx.yaml (%s%s)", n, strings.Join(names, ", "), more)
	}
	if s.Offered == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, " · %d offered: ", s.Offered)
	var parts []string
	for _, src := range sourceRank {
		n := s.Sources[src]
		if n == 0 {
			continue
		}
		part := fmt.Sprintf("%d %s", n, src)
		if src == localtools.SourceUnavailable {
			part += ` (answered "not available in this test")`
		}
		parts = append(parts, part)
	}
	b.WriteString(strings.Join(parts, ", "))
	return b.String()
}
