package runner

import (
	"errors"
	"sync"
)

// RunHolder keeps the runs of one invocation over several files executing,
// for retention, until the invocation ends. Each file is its own run and
// journal, and each run start deletes the oldest finished runs beyond the
// newest 20: without a holder, a folder of 25 files deleted the first
// files' runs, which its own report named, before it ended. With one
// (Options.HoldRuns), each run's journal is final when its report is made
// but its lock stays held until Release, so no run start (in this or
// another process) deletes a run the invocation reported.
type RunHolder struct {
	mu       sync.Mutex
	releases []func() error
}

func (h *RunHolder) hold(release func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.releases = append(h.releases, release)
}

// Release ends the hold on every run held so far. The runs are then
// ordinary finished runs, which later starts may delete. It is safe to
// call more than once.
func (h *RunHolder) Release() error {
	h.mu.Lock()
	rs := h.releases
	h.releases = nil
	h.mu.Unlock()
	var errs []error
	for _, r := range rs {
		errs = append(errs, r())
	}
	return errors.Join(errs...)
}
