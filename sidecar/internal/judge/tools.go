package judge

import (
	"fmt"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/vscodetools"
)

// ToolUse is one call of a replay-verified tool trace: the model requested
// Name in a validated batch, and Source answered it (live, recorded,
// unavailable or disabled).
type ToolUse struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Reference is the declared reference that brought the tool in (the
	// set edit for edit/editFiles).
	Reference string `json:"-"`
}

// EvaluateTool judges toolCalled / toolNotCalled against the tool trace of a
// turn that ran on the tool harness and was replay-verified; the runner
// never calls it with any other trace. Called means requested in a validated
// batch, whatever answered it; the sources are in the message. The name is
// matched as the agent file writes it: the tool (edit/editFiles, or its
// legacy editFiles), or a set or reference standing for it (edit).
func EvaluateTool(a agentfile.Assertion, uses []ToolUse) AssertionResult {
	r := AssertionResult{Index: a.Index, Type: a.Type, Expected: a.Value}
	var sources []string
	for _, u := range uses {
		if u.Name == a.Value || u.Reference == a.Value || vscodetools.Covers(a.Value, u.Name) {
			sources = append(sources, u.Source)
		}
	}
	called := len(sources) > 0
	switch a.Type {
	case agentfile.ToolCalled, agentfile.ToolNotCalled:
		// toolCalled passes when the model called it, toolNotCalled when
		// it did not; the message says which happened either way.
		r.Outcome = Fail
		if called == (a.Type == agentfile.ToolCalled) {
			r.Outcome = Pass
		}
		r.Message = fmt.Sprintf("the model did not call %s", a.Value)
		if called {
			r.Message = fmt.Sprintf("the model called %s (%s)", a.Value, strings.Join(sources, ", "))
		}
	default:
		r.Outcome = Unknown
		r.Message = fmt.Sprintf("%s is not a tool assertion", a.Type)
	}
	return r
}
