package route

import (
	"context"
	"sync/atomic"
)

// Counted wraps a Model and counts the Complete calls that reach it: the
// harness reports the count as a turn's live calls, and tests use it to
// prove a path made no model call.
type Counted struct {
	Model
	calls atomic.Int32
}

// Complete counts the call and passes it on.
func (m *Counted) Complete(ctx context.Context, req Request) (Completion, error) {
	m.calls.Add(1)
	return m.Model.Complete(ctx, req)
}

// Calls is how many Complete calls have reached the model so far.
func (m *Counted) Calls() int32 { return m.calls.Load() }
