package mcpserver_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/mcpserver"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// progressClient is a go-sdk client connected to an in-process server that
// keeps every notifications/progress it receives.
type progressClient struct {
	cs   *mcp.ClientSession
	mu   sync.Mutex
	got  []*mcp.ProgressNotificationParams
	seen chan struct{}
}

func connectProgress(t *testing.T) *progressClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pc := &progressClient{seen: make(chan struct{}, 64)}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(mcpserver.Config{Version: "test", Roots: testRoots(t), ExplicitRoots: true,
		Getenv: envWith(map[string]string{"KMX_HOME": testutil.PrivateDir(t)})}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "kmx-test", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			pc.mu.Lock()
			pc.got = append(pc.got, req.Params)
			pc.mu.Unlock()
			pc.seen <- struct{}{}
		},
	})
	pc.cs, err = client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { _ = pc.cs.Close() })
	return pc
}

// callWithToken calls tool with args and, when token is not nil, a
// progressToken in the request's _meta.
func (pc *progressClient) callWithToken(t *testing.T, tool string, args map[string]any, token any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if token != nil {
		params.SetProgressToken(token)
	}
	res, err := pc.cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// wait returns the notifications received once there are n of them (a
// notification may be handled just after the call's result arrives).
func (pc *progressClient) wait(t *testing.T, n int) []*mcp.ProgressNotificationParams {
	t.Helper()
	for {
		pc.mu.Lock()
		got := slices.Clone(pc.got)
		pc.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-pc.seen:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d progress notifications, want %d", len(got), n)
		}
	}
}

// TestTestToolProgress: a Test call with a progressToken gets a
// notifications/progress per finished example: progress the examples
// done, total the examples selected, message "ID: verdict" (issue 31 item
// 11). A call without a token gets none.
func TestTestToolProgress(t *testing.T) {
	pc := connectProgress(t)
	file := fixture(t, "triage.agent.md")

	var rep runner.Report
	decode(t, pc.callWithToken(t, "Test", map[string]any{"file": file}, "triage-1"), &rep)
	if len(rep.Examples) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	got := pc.wait(t, len(rep.Examples))
	var want, msgs []string
	for _, ex := range rep.Examples {
		want = append(want, fmt.Sprintf("%s: %s", ex.ID, ex.Verdict))
	}
	for i, p := range got {
		if p.ProgressToken != "triage-1" || p.Progress != float64(i+1) || p.Total != 2 {
			t.Errorf("notification %d: token %v progress %v total %v, want triage-1 %d 2", i+1, p.ProgressToken, p.Progress, p.Total, i+1)
		}
		msgs = append(msgs, p.Message)
	}
	slices.Sort(want)
	slices.Sort(msgs)
	if !slices.Equal(msgs, want) || !slices.Contains(msgs, "billing-question: fail") {
		t.Errorf("messages %q, want %q", msgs, want)
	}

	// The total is the selection; trials count each example once; a
	// numeric token is kept as the client sent it.
	decode(t, pc.callWithToken(t, "Test", map[string]any{"file": file, "examples": []string{"crash-report"}, "trials": 3}, 7), &rep)
	got = pc.wait(t, 3)
	if len(got) != 3 || got[2].Progress != 1 || got[2].Total != 1 || got[2].Message != "crash-report: pass" || got[2].ProgressToken != float64(7) {
		t.Errorf("one example, three trials: %+v", got[2:])
	}

	// No token, no notification: a Run of both examples adds none before
	// the next call's first.
	if res := pc.callWithToken(t, "Run", map[string]any{"file": file}, nil); res.IsError {
		t.Fatalf("run: %v", res.Content)
	}
	pc.callWithToken(t, "Run", map[string]any{"file": file, "examples": []string{"crash-report"}}, "after")
	got = pc.wait(t, 4)
	if len(got) != 4 || got[3].ProgressToken != "after" || got[3].Message != "crash-report: pass" {
		t.Errorf("after a call without a progressToken: %+v", *got[3])
	}
}
