package sessions

import (
	"context"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// BenchmarkToolTurnPaired measures a kmx-local-tools-v1 turn on the fake
// model (send 1, one recorded call, send 2: nine records) against a
// tool-free chat turn (one send: five records), paired: each iteration runs
// one of each on the same Sessions service and journal, in alternating
// order, so machine noise falls on both alike. Each is one example's whole
// Sessions work as the runner does it (placement, the turn with its
// commits, the verified read-back and the replay with zero calls). It
// reports each side's wall time and process CPU per turn and their ratios
// (target: a tool turn at most 1.3x a tool-free one; docs/benchmarks.md).
func BenchmarkToolTurnPaired(b *testing.B) {
	ctx := context.Background()
	svc := newBenchService(ctx, b)
	defer svc.close()
	chat := &sessionspb.ExecuteRequest{
		Session:      &sessionspb.CreateSessionRequest{Purpose: harness.PurposeAgent, ExampleId: "weekly", Model: fakeIdentity},
		Instructions: fakeInstructions, Input: "week 48",
	}
	tool := &sessionspb.ExecuteRequest{
		Session: &sessionspb.CreateSessionRequest{Purpose: harness.PurposeAgent, ExampleId: "weekly", Model: fakeIdentity,
			Tools: []*sessionspb.ToolSpec{{Name: "ping", State: localtools.Enabled, Source: localtools.SourceRecorded,
				Recorded: []*sessionspb.SavedCall{{Arguments: "{}", Result: `{"pong": true}`}}}}},
		Instructions: "Call the tool `ping`", Input: "week 48",
	}
	var chatCPU, toolCPU time.Duration
	execute := func(req *sessionspb.ExecuteRequest, answer string, cpu *time.Duration) time.Duration {
		cpuStart, _ := processCPU()
		start := time.Now()
		var got string
		verified := false
		err := svc.e.Execute(ctx, req, func(ev *sessionspb.ExecuteEvent) error {
			if v := ev.GetVerified(); v != nil {
				verified, got = v.GetVerified() && v.GetLiveCalls() == 0, v.GetAnswer()
			}
			return nil
		})
		took := time.Since(start)
		cpuEnd, _ := processCPU()
		*cpu += cpuEnd - cpuStart
		if err != nil || !verified || (answer != "" && got != answer) {
			b.Fatalf("turn: verified %v, answer %q, %v", verified, got, err)
		}
		return took
	}
	var chatTime, toolTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 && i%(turnsPerRun/2) == 0 {
			b.StopTimer()
			svc.next(ctx, b)
			b.StartTimer()
		}
		if i%2 == 0 {
			chatTime += execute(chat, "", &chatCPU)
			toolTime += execute(tool, `{"pong":true}`, &toolCPU)
		} else {
			toolTime += execute(tool, `{"pong":true}`, &toolCPU)
			chatTime += execute(chat, "", &chatCPU)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(chatTime.Nanoseconds())/float64(b.N), "chat-ns/turn")
	b.ReportMetric(float64(toolTime.Nanoseconds())/float64(b.N), "tool-ns/turn")
	if chatTime > 0 {
		b.ReportMetric(float64(toolTime)/float64(chatTime), "tool/chat")
	}
	if _, ok := processCPU(); ok && chatCPU > 0 {
		b.ReportMetric(float64(chatCPU.Nanoseconds())/float64(b.N), "chat-cpu-ns/turn")
		b.ReportMetric(float64(toolCPU.Nanoseconds())/float64(b.N), "tool-cpu-ns/turn")
		b.ReportMetric(float64(toolCPU)/float64(chatCPU), "tool/chat-cpu")
	}
}
