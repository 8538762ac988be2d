package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestTurnCutAtItsDeadlineIsCancelledNotUnavailable: a harness stream that
// fails once the turn's deadline has passed is the deadline (a cancelled
// turn, "turn deadline exceeded"), even before ctx.Err() says so or when
// it says Canceled; without
// a deadline passed, it is still the failure it was.
func TestTurnCutAtItsDeadlineIsCancelledNotUnavailable(t *testing.T) {
	late := testutil.PastDeadline(context.Background())
	if late.Err() != nil {
		t.Fatal("the test context must not have ended yet")
	}
	if err := ended(late); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ended(deadline passed, timer not run) = %v, want DeadlineExceeded", err)
	}
	if got := cancelledTerminal(ended(late), 3); got.State != journal.StateCancelled || got.Error != harness.ErrTextDeadline || got.Turn != 3 {
		t.Errorf("terminal %+v, want cancelled %q", got.TurnTerminal, harness.ErrTextDeadline)
	}
	// The runner cutting the Execute stream at the same deadline cancels
	// ctx first: still the deadline.
	parent, cut := context.WithCancel(context.Background())
	cut()
	if err := ended(testutil.PastDeadline(parent)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ended(cancelled at its passed deadline) = %v, want DeadlineExceeded", err)
	}
	live, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := ended(live); err != nil {
		t.Errorf("ended(live) = %v, want nil", err)
	}
	cancel()
	if err := ended(live); !errors.Is(err, context.Canceled) {
		t.Errorf("ended(cancelled) = %v, want Canceled", err)
	}
	if got := cancelledTerminal(ended(live), 1); got.Error != harness.ErrTextCancelled {
		t.Errorf("cancelled terminal says %q, want %q", got.Error, harness.ErrTextCancelled)
	}
}
