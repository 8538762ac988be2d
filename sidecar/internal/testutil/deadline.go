package testutil

import (
	"context"
	"time"
)

// PastDeadline wraps ctx as a context whose deadline passed a moment ago
// but which has not been cancelled: what code can see under load between a
// deadline and its timer's callback, which runs as a goroutine.
func PastDeadline(ctx context.Context) context.Context { return pastDeadline{ctx} }

type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
