package runner

import "github.com/kmxdev/kmx/sidecar/internal/invocation"

// Pool is the slots for turns in flight that several invocations share: a
// comparison runs each model (and the baseline) as its own invocation and
// journal, all on one --concurrency. Each worker holds a slot while it
// runs an example, and a judge sample beside its example's first sample
// holds another only when one is free (see judgeSampler), so the
// invocations together never have more turns in flight than the pool has
// slots, and none can wait on a slot while holding the one it needs.
type Pool struct{ slots chan struct{} }

// NewPool returns a pool of n slots (0 or less: the default concurrency;
// more than invocation.MaxConcurrency: that many).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = invocation.DefaultConcurrency
	}
	return &Pool{slots: make(chan struct{}, min(n, invocation.MaxConcurrency))}
}

// Size is how many turns the pool lets run at once.
func (p *Pool) Size() int { return cap(p.slots) }
