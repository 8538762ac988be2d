package harness

import (
	"context"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// BenchmarkLiveTurn is one chat turn on the fake model over the in-memory
// gRPC stream: the harness's share of a Sessions turn, without the journal.
func BenchmarkLiveTurn(b *testing.B) {
	c := dial(b, func(string, route.Identity) (route.Model, error) { return route.NewFake(), nil })
	req := chatRequest(PurposeAgent, "week 48")
	req.Instructions = "Reply with exactly `Release notes:` followed by the input"
	req.Model.Route, req.Model.Model = route.Fake, route.Fake
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		events, err := collect(ctx, b, c, req)
		if err != nil || len(events) != 3 {
			b.Fatalf("turn: %d events, %v", len(events), err)
		}
	}
}
