package runner

import (
	"context"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestExpiredBeforeTheTimerRuns: an example whose deadline has passed is
// expired even while its timer has not yet cancelled the context, so a turn
// the harness's copy of the deadline cut first is reported as the deadline.
func TestExpiredBeforeTheTimerRuns(t *testing.T) {
	if !expired(testutil.PastDeadline(context.Background())) {
		t.Error("a context past its deadline is not expired")
	}
	live, cancel := context.WithTimeout(context.Background(), time.Hour)
	if expired(live) {
		t.Error("a live context is expired")
	}
	cancel()
	if !expired(live) {
		t.Error("a cancelled context is not expired")
	}
}
