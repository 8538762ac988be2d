package sessions

import (
	"context"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/sessions/sessionspb"
)

// turnsPerRun is how many examples one benchmark journal holds before a
// fresh one is started (outside the timer): a realistic invocation size, so
// the figure is not skewed by one journal growing to b.N turns.
const turnsPerRun = 20

// BenchmarkTurn measures one example's Sessions work on the fake model with
// a real journal: CreateSession + RunTurn + VerifyTurn (six committed
// records' worth of work: five appends and a verified read-back plus replay).
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	var (
		run *testRun
		e   *Embedded
	)
	next := func() {
		if e != nil {
			e.Close()
			run.finish(b)
		}
		run = newRun(b)
		var err error
		if e, err = Start(ctx, Options{Journal: run.j, Resolve: fakeResolver}); err != nil {
			b.Fatal(err)
		}
	}
	next()
	defer func() { e.Close() }()
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
			next()
			resume()
		}
		c := e.Client()
		s, err := c.CreateSession(ctx, &sessionspb.CreateSessionRequest{Purpose: harness.PurposeAgent, ExampleId: "weekly", Model: fakeIdentity})
		if err != nil {
			b.Fatal(err)
		}
		r, err := c.RunTurn(ctx, &sessionspb.RunTurnRequest{SessionId: s.GetSessionId(), Instructions: fakeInstructions, Input: "week 48"})
		if err != nil || r.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
			b.Fatalf("run turn: %v %v", r, err)
		}
		v, err := c.VerifyTurn(ctx, &sessionspb.VerifyTurnRequest{SessionId: s.GetSessionId(), Turn: 1})
		if err != nil || !v.GetVerified() {
			b.Fatalf("verify: %v %v", v, err)
		}
	}
	pause()
	if cpuOK {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
