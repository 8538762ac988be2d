package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessions"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// A turn the Sessions service cannot journal fails with the journal's
// words, never gRPC's: a judge sample on a full disk said "judge sample 2
// of 2 was unavailable: … rpc error: code = Internal desc = append
// session.placed record …" (issue 31 item 9). Here the journal is closed
// under the service, which fails its first append the same way.
func TestAnExecuteFailureCarriesNoGRPCStatusText(t *testing.T) {
	ctx := context.Background()
	dir, err := journalDir(testutil.PrivateDir(t))
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Create(ctx, dir, journal.RunMeta{KmxVersion: "t", AgentID: "a", AgentRevision: "r", Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	emb, err := sessions.Start(ctx, sessions.Options{Journal: j, Resolve: func(string, route.Identity) (route.Model, error) { return route.NewFake(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	j.Close()

	_, err = newSessionsExecutor(emb).Execute(ctx, Turn{Purpose: invocation.PurposeJudge, ExampleID: "weekly", Instructions: "Reply with exactly `ok`.", Input: "x",
		Model: route.Identity{Route: route.Fake, Model: "fake"}})
	if err == nil {
		t.Fatal("a turn on a closed journal executed")
	}
	if msg := err.Error(); strings.Contains(msg, "rpc error") || strings.Contains(msg, "code =") || !strings.Contains(msg, "journal") {
		t.Fatalf("Execute's error reads %q: want the journal's words without a gRPC status", msg)
	}
}
