package route

import (
	"context"
	"fmt"
)

// OfflineModel is a model identity with no route behind it: a re-grade
// (kmx test --from) names the model that answered in the source run, whose
// answers it replays, and needs no endpoint unless a judge sample must be
// fresh. Complete sends nothing and says which flag would have sent it.
type OfflineModel struct {
	id   Identity
	flag string
}

// NewOffline is the identity id with no route; flag is the setting that
// would give it one, in the words of the front that shows the refusal
// (--endpoint on the command line, the server's startup endpoint in MCP).
func NewOffline(id Identity, flag string) *OfflineModel {
	return &OfflineModel{id: id, flag: flag}
}

// Identity is the model's identity, as the source run journaled it.
func (m *OfflineModel) Identity() Identity { return m.id }

// Complete sends nothing: a turn that needs this model fresh is refused.
func (m *OfflineModel) Complete(context.Context, Request) (Completion, error) {
	return Completion{}, m.Refusal()
}

// Refusal is what Complete answers, for a caller that refuses a fresh
// turn before placing it.
func (m *OfflineModel) Refusal() error { return &OfflineError{Model: m.id.Model, Flag: m.flag} }

// OfflineError is a fresh call a re-grade could not make: no endpoint was
// given for the model.
type OfflineError struct{ Model, Flag string }

func (e *OfflineError) Error() string {
	return fmt.Sprintf("model %q has no endpoint in this re-grade, and this turn cannot be reused from the source run: pass %s with a URL to send it fresh", e.Model, e.Flag)
}

// NextStep is what to pass (problem.Problem).
func (e *OfflineError) NextStep() string {
	return "pass " + e.Flag + " with a URL to send the fresh sample, or keep the rubric and judge model as the source run had them"
}
