package runner

import (
	"github.com/kmxdev/kmx/sidecar/internal/failures"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
)

// RetentionReport says whether a non-pass Test was retained for Explain.
type RetentionReport struct {
	// Status is "retained" or "unavailable".
	Status string `json:"status"`
	// Reason says why retention is unavailable, in fixed text.
	Reason string `json:"reason,omitempty"`
}

// retain writes the bounded failure projection of a completed non-pass
// Test. It never changes a verdict: a failure to retain is reported as
// retention.status "unavailable".
func retain(stateRoot string, plan *invocation.Plan, rep *Report) *RetentionReport {
	subject, err := plan.Subject()
	if err != nil {
		return &RetentionReport{Status: failures.StatusUnavailable, Reason: "the file's subject could not be resolved"}
	}
	rec := failures.Record{
		Subject:   subject,
		Revision:  plan.Agent.Revision,
		Selection: rep.Selection,
		Agent:     failures.Identity{Provider: rep.Route.Agent.Route, Model: rep.Route.Agent.Model},
		Verdict:   rep.Verdict,
	}
	if j := rep.Route.Judge; j != nil {
		rec.Judge = &failures.Identity{Provider: j.Route, Model: j.Model}
	}
	for _, ex := range rep.Examples {
		if ex.Verdict == VerdictPass {
			continue
		}
		fe := failures.Example{ID: ex.ID, Verdict: ex.Verdict, Message: ex.Message, Deciding: ex.Deciding}
		for _, a := range ex.Assertions {
			fe.Assertions = append(fe.Assertions, failures.Assertion{
				Index: a.Index, Type: string(a.Type), Outcome: string(a.Outcome),
				Expected: a.Expected, Actual: a.Actual, Scores: a.Scores, Threshold: a.Threshold, Message: a.Message,
			})
		}
		rec.Examples = append(rec.Examples, fe)
	}
	status, err := failures.Save(stateRoot, rec)
	if err != nil && status != failures.StatusRetained {
		return &RetentionReport{Status: failures.StatusUnavailable, Reason: retentionReason(len(rec.Examples))}
	}
	return &RetentionReport{Status: status}
}

func retentionReason(nonPass int) string {
	if nonPass > failures.MaxExamplesPerRecord {
		return "more than 10 examples did not pass; no partial record is kept"
	}
	return "the failure record could not be written"
}
