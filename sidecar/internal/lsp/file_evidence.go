package lsp

import (
	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// fileEvidence is the two sides of every failed file assertion in rep,
// from each example's verified workspace outcome (what the journal keeps)
// and the assertion as the text that ran (src) writes it; nil when there
// is none. An assertion whose sides cannot be shown (content not kept,
// credential-shaped text) has no entry: the editor shows its message.
func (s *Server) fileEvidence(src source, rep *runner.Report) []FileEvidence {
	var out []FileEvidence
	var examples map[string]agentfile.Example
	for _, ex := range rep.Examples {
		o := ex.WorkspaceOutcome()
		if o == nil {
			continue
		}
		if examples == nil {
			examples = map[string]agentfile.Example{}
			if a := s.parse(src.path, src.text).Agent; a != nil {
				for _, e := range a.Examples {
					examples[e.ID] = e
				}
			}
		}
		def, ok := examples[ex.ID]
		if !ok {
			continue
		}
		for _, r := range ex.Assertions {
			if r.Outcome != judge.Fail || !judge.IsFileAssertion(r.Type) || r.Index < 0 || r.Index >= len(def.Assertions) {
				continue
			}
			a := def.Assertions[r.Index]
			if a.Type != r.Type {
				continue
			}
			if expected, actual, ok := workspace.Evidence(string(a.Type), a.Operands().Path, a.Value, a.Operands().Paths, *o); ok {
				out = append(out, FileEvidence{Example: ex.ID, Assertion: r.Index, Expected: expected, Actual: actual})
			}
		}
	}
	return out
}
