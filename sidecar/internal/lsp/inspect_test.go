package lsp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
)

// TestInspectReplaysTheLastRunWithZeroModelCalls runs a real test through
// the server (fake model, journaled), then finds it through the "Replay last
// run" lens and replays it with kmx/inspect.
func TestInspectReplaysTheLastRunWithZeroModelCalls(t *testing.T) {
	path := writeAgent(t, "greeter.agent.md", greeter)
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	uri := fileURI(path)
	c.open(uri, 1, greeter)

	lensTitles := func() (titles []string, replayArgs []json.RawMessage) {
		for _, l := range c.lenses(uri) {
			titles = append(titles, l.Command.Title)
			if l.Command.Command == lsp.CommandInspectRun {
				replayArgs = l.Command.Arguments
			}
		}
		return titles, replayArgs
	}
	if titles, args := lensTitles(); args != nil {
		t.Fatalf("a Replay lens before any run: %v", titles)
	}

	var res lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri}, &res)
	if res.Report == nil || res.Report.RunID == "" {
		t.Fatalf("test result %+v", res)
	}
	titles, args := lensTitles()
	if len(args) != 1 || !strings.Contains(strings.Join(titles, "|"), "Replay last run") {
		t.Fatalf("after a run: lenses %v, replay args %s", titles, args)
	}
	var p lsp.InspectParams
	if err := json.Unmarshal(args[0], &p); err != nil || p.RunID != res.Report.RunID {
		t.Fatalf("replay lens names run %q, want %q (%v)", p.RunID, res.Report.RunID, err)
	}

	var in lsp.InspectResult
	c.mustCall(lsp.MethodInspect, p, &in)
	got := in.Inspection
	if got == nil || got.Schema != readback.InspectSchema || got.LiveCalls != 0 || got.Run.ID != p.RunID || len(got.Turns) == 0 {
		t.Fatalf("inspection = %+v", got)
	}
	if !strings.Contains(got.Label, "not a test result") || got.ReasoningShown {
		t.Errorf("label %q, reasoning shown %v", got.Label, got.ReasoningShown)
	}
	// Issue 31 item 20: the replay panel shows the instructions each agent
	// turn sent, so the reply carries them.
	for _, turn := range got.Turns {
		if !got.ContentShown || turn.Instructions == nil || !strings.Contains(*turn.Instructions, "You greet people.") || turn.InstructionsBytes != len(*turn.Instructions) {
			t.Errorf("turn %s/%d carries instructions %v (%d bytes), content shown %v", turn.Example, turn.Turn, turn.Instructions, turn.InstructionsBytes, got.ContentShown)
		}
	}

	if err := c.call(lsp.MethodInspect, lsp.InspectParams{RunID: "../etc"}, nil); rpcCode(err) != jsonrpc2.InvalidParams {
		t.Errorf("inspect of a bad run ID: %v, want InvalidParams", err)
	}
	if err := c.call(lsp.MethodInspect, lsp.InspectParams{RunID: "20200101T000000.000000000Z-00000000"}, nil); rpcCode(err) != lsp.CodeRequestFailed {
		t.Errorf("inspect of a missing run: %v, want RequestFailed", err)
	}
}
