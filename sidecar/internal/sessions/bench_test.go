package sessions

import (
	"context"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// turnsPerRun is how many examples one benchmark journal holds before a
// fresh one is started (outside the timer): a realistic invocation size, so
// the figure is not skewed by one journal growing to b.N turns.
const turnsPerRun = 20

// benchService is a Sessions service on a journal of its own, the pair
// replaced by next (which the benchmarks call outside the timer) every
// turnsPerRun turns.
type benchService struct {
	run *testRun
	e   *Embedded
}

func newBenchService(ctx context.Context, b *testing.B) *benchService {
	s := &benchService{}
	s.next(ctx, b)
	return s
}

// next closes the service and finishes its journal, then starts both anew.
func (s *benchService) next(ctx context.Context, b *testing.B) {
	if s.e != nil {
		s.e.Close()
		s.run.finish(b)
	}
	s.run = newRun(b)
	var err error
	if s.e, err = Start(ctx, Options{Journal: s.run.j, Resolve: fakeResolver}); err != nil {
		b.Fatal(err)
	}
}

func (s *benchService) close() { s.e.Close() }

// BenchmarkTurn measures one example's Sessions work on the fake model with
// a real journal, as the runner does it: one Execute request on a reused
// Execute stream (placement, the turn on the harness stream with its
// request committed before the send, the rest of the turn in one commit,
// then the verified read-back and the replay).
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	svc := newBenchService(ctx, b)
	defer svc.close()
	// cpu sums process CPU over the timed stretches only, like the timer.
	var cpu time.Duration
	cpuStart, cpuOK := processCPU()
	pause := func() {
		b.StopTimer()
		now, _ := processCPU()
		cpu += now - cpuStart
	}
	resume := func() {
		cpuStart, _ = processCPU()
		b.StartTimer()
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpuStart, _ = processCPU()
	for i := 0; i < b.N; i++ {
		if i > 0 && i%turnsPerRun == 0 {
			pause()
			svc.next(ctx, b)
			resume()
		}
		verified := false
		err := svc.e.Execute(ctx, &sessionspb.ExecuteRequest{
			Session:      &sessionspb.CreateSessionRequest{Purpose: harness.PurposeAgent, ExampleId: "weekly", Model: fakeIdentity},
			Instructions: fakeInstructions, Input: "week 48",
		}, func(ev *sessionspb.ExecuteEvent) error {
			verified = verified || ev.GetVerified().GetVerified()
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if !verified {
			b.Fatal("the turn did not verify")
		}
	}
	pause()
	if cpuOK {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
