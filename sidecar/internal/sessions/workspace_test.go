package sessions

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/journal/journaltest"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
	"github.com/kmxdev/kmx/sidecar/internal/workspace/workspacetest"
)

// A kmx-workspace-tools-v1 turn of three sends (the fake model reads, edits,
// answers) is journaled with each call's result and its outcome, and
// verifies from the journal alone, with the scratch copy removed and a
// resolver that fails the test if consulted: zero model calls, the outcome
// handed back for the file assertions. A forged outcome position or a
// missing outcome never verifies.
func TestWorkspaceTurnOfThreeSendsVerifiesWithZeroCalls(t *testing.T) {
	run := func(t *testing.T) (*testRun, string, []journal.Record) {
		w := workspacetest.Scratch(t, map[string]string{"a.txt": "hello world\n"})
		reg := &workspace.Registry{}
		key := reg.Add(w)
		tr := newRun(t)
		e, err := Start(context.Background(), Options{Journal: tr.j, Resolve: fakeResolver, Workspaces: reg})
		if err != nil {
			t.Fatal(err)
		}
		var id string
		err = e.Execute(context.Background(), &sessionspb.ExecuteRequest{
			Session: &sessionspb.CreateSessionRequest{Purpose: harness.PurposeAgent, ExampleId: "edit", Model: fakeIdentity,
				Tools: []*sessionspb.ToolSpec{
					{Name: "read/readFile", Function: "read_readFile", State: localtools.Enabled, Source: localtools.SourceWorkspace},
					{Name: "edit/editFiles", Function: "edit_editFiles", State: localtools.Enabled, Source: localtools.SourceWorkspace},
				},
				Workspace: &sessionspb.WorkspaceRef{Key: key, Fixture: "fx", Hash: w.Fixture().Hash, Paths: []string{"a.txt"}}},
			Instructions: "Replace `world` with `kmx` in `a.txt`", Input: "go",
		}, func(ev *sessionspb.ExecuteEvent) error {
			if p := ev.GetPlaced(); p != nil {
				id = p.GetSessionId()
				if p.GetHarness() != harness.WorkspaceTools {
					t.Errorf("placed on %q", p.GetHarness())
				}
			}
			if v := ev.GetVerified(); v != nil && (!v.GetVerified() || len(v.GetWorkspaceOutcomeJson()) == 0) {
				t.Errorf("live verification = %v", v)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
		if err := w.Remove(); err != nil {
			t.Fatal(err)
		}
		recs, err := tr.j.Records(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		tr.finish(t)
		return tr, id, recs
	}

	tr, id, recs := run(t)
	var kinds []journal.Kind
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	req, comp := journal.KindModelRequest, journal.KindModelCompletion
	call, res := journal.KindToolCall, journal.KindToolResult
	want := []journal.Kind{journal.KindSessionPlaced, journal.KindTurnStarted, req, comp, call, res, req, comp, call, res, req, comp,
		journal.KindWorkspaceOutcome, journal.KindTurnTerminal}
	if !slices.Equal(kinds, want) {
		t.Fatalf("journaled kinds %v, want %v", kinds, want)
	}
	v := verifyReopened(t, tr, id)
	if !v.GetVerified() || v.GetLiveCalls() != 0 || len(v.GetToolUses()) != 2 || !strings.Contains(string(v.GetWorkspaceOutcomeJson()), `"path":"a.txt"`) {
		t.Fatalf("verify = %v", v)
	}

	t.Run("missing outcome", func(t *testing.T) {
		tr, id, recs := run(t)
		journaltest.DeleteRecord(t, tr.j.Path(), firstSeqs(recs)[journal.KindWorkspaceOutcome])
		if v := verifyReopened(t, tr, id); v.GetVerified() {
			t.Errorf("a workspace turn without its outcome verified: %v", v)
		}
	})
	t.Run("forged result", func(t *testing.T) {
		tr, id, recs := run(t)
		rewrite(t, tr, firstSeqs(recs)[journal.KindToolResult], true, func(v *journal.ToolResult) { v.Result = "hello there\n" })
		if v := verifyReopened(t, tr, id); v.GetVerified() {
			t.Errorf("a forged workspace result verified: %v", v)
		}
	})
}
