package judge

import (
	"encoding/json"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// IsFileAssertion reports whether t is judged from a workspace outcome.
func IsFileAssertion(t agentfile.AssertionType) bool {
	switch t {
	case agentfile.FileContains, agentfile.FileNotContains, agentfile.FileMatches, agentfile.FileUnchanged, agentfile.FilesChanged:
		return true
	}
	return false
}

// DecodeOutcome reads a journaled workspace.outcome payload (nil when the
// turn journaled none, or it does not decode).
func DecodeOutcome(payload []byte) *workspace.Outcome {
	if len(payload) == 0 {
		return nil
	}
	var rec journal.WorkspaceOutcome
	if journal.Decode(payload, &rec) != nil {
		return nil
	}
	var o workspace.Outcome
	if json.Unmarshal(rec.Outcome, &o) != nil {
		return nil
	}
	return &o
}

// EvaluateFile judges one file assertion from the replay-verified turn's
// workspace outcome (workspace.Judge), never the live folder: without an
// outcome it is unknown, never a pass. Evidence names paths, never the
// file's content.
func EvaluateFile(a agentfile.Assertion, o *workspace.Outcome) AssertionResult {
	op := a.Operands()
	r := AssertionResult{Index: a.Index, Type: a.Type, Expected: op.Path}
	if a.Type == agentfile.FilesChanged {
		r.Expected = ""
	}
	if o == nil {
		r.Outcome, r.Message = Unknown, "the turn journaled no workspace outcome, so the files cannot be judged"
		return r
	}
	v, msg := workspace.Judge(string(a.Type), op.Path, a.Value, op.Paths, *o)
	r.Outcome, r.Message = Outcome(v), msg
	return r
}
