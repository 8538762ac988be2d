package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
	"github.com/kmxdev/kmx/sidecar/internal/workspace/workspacetest"
)

// scratch materializes a one-file fixture and returns its copy.
func scratch(t *testing.T) *workspace.Workspace {
	t.Helper()
	return workspacetest.Scratch(t, map[string]string{"a.txt": "hello world\n"})
}

func workspaceRequest(tools ...*sessionspb.ToolSpec) *sessionspb.HarnessTurnRequest {
	req := toolRequest(tools...)
	req.Harness = WorkspaceTools
	req.Workspace = &sessionspb.WorkspaceRef{Key: "k", Fixture: "fx", Hash: "sha256:x", Paths: []string{"a.txt"}}
	return req
}

func workspaceTool(name, fn string) *sessionspb.ToolSpec {
	return &sessionspb.ToolSpec{Name: name, Function: fn, State: localtools.Enabled, Source: localtools.SourceWorkspace}
}

// runWorkspace runs one live kmx-workspace-tools-v1 turn on w.
func runWorkspace(t *testing.T, m *scriptedToolModel, req *sessionspb.HarnessTurnRequest, w *workspace.Workspace) []*sessionspb.HarnessEvent {
	t.Helper()
	s := &recordingStream{ctx: context.Background()}
	_ = runTools(context.Background(), s, m, 1, req, liveDispatch(nil, w), m.calls.Load, workspaceOutcome(w, 1, req.GetWorkspace().GetPaths()))
	return s.events
}

// A workspace turn reads, edits (in the scratch copy only) and answers in
// three sends, and its last record before the terminal is the outcome:
// the change and the asserted file's final bytes.
func TestWorkspaceTurnEditsTheCopyAndEndsWithItsOutcome(t *testing.T) {
	w := scratch(t)
	m := &scriptedToolModel{replies: []route.Completion{
		{ToolCalls: []route.ToolCall{{ID: "r", Name: "read_readFile", Arguments: `{"filePath":"a.txt"}`}}},
		{ToolCalls: []route.ToolCall{{ID: "e", Name: "edit_editFiles", Arguments: `{"filePath":"a.txt","oldString":"world","newString":"kmx"}`}}},
		{Text: "edited"},
	}}
	req := workspaceRequest(workspaceTool("read/readFile", "read_readFile"), workspaceTool("edit/editFiles", "edit_editFiles"))
	events := runWorkspace(t, m, req, w)
	if term := terminalOf(t, events); term.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED || term.GetAnswer() != "edited" {
		t.Fatalf("terminal = %+v", term)
	}
	if m.calls.Load() != 3 {
		t.Fatalf("%d sends, want 3", m.calls.Load())
	}
	oc := events[len(events)-2].GetWorkspaceOutcome()
	if oc == nil {
		t.Fatalf("the record before the terminal is %T, want the workspace outcome", events[len(events)-2].GetEvent())
	}
	var rec journal.WorkspaceOutcome
	if err := journal.Decode(oc.GetOutcomeJson(), &rec); err != nil {
		t.Fatal(err)
	}
	var o workspace.Outcome
	if err := json.Unmarshal(rec.Outcome, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Changes) != 1 || o.Changes[0].Path != "a.txt" || string(o.Changes[0].Content) != "hello kmx\n" {
		t.Fatalf("outcome changes = %+v", o.Changes)
	}
	if v, msg := workspace.Judge(workspace.FileContains, "a.txt", "hello kmx", nil, o); v != workspace.Pass {
		t.Fatalf("fileContains judged %s: %s", v, msg)
	}
	// Results carry the source workspace and are journaled per call, with
	// indexes counting over the turn.
	n := 0
	for _, e := range events {
		if r := e.GetToolResult(); r != nil {
			n++
			var tr journal.ToolResult
			if err := journal.Decode(r.GetResultJson(), &tr); err != nil || tr.Source != localtools.SourceWorkspace || tr.Index != n {
				t.Fatalf("result %d = %+v (%v)", n, tr, err)
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d results, want 2", n)
	}
	// The edit went to the copy; the fixture is unchanged.
	if b, _ := w.Fixture().File("a.txt"); string(b) != "hello world\n" {
		t.Fatalf("fixture now holds %q", b)
	}
}

// Eight sends at most: a batch on the eighth fails the turn; seven rounds
// of calls then text completes it.
func TestWorkspaceTurnSendsAtMostEightTimes(t *testing.T) {
	for _, rounds := range []int{7, 8} {
		w := scratch(t)
		var replies []route.Completion
		for i := range rounds {
			replies = append(replies, route.Completion{ToolCalls: []route.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: "read_readFile", Arguments: `{"filePath":"a.txt"}`}}})
		}
		replies = append(replies, route.Completion{Text: "done"})
		m := &scriptedToolModel{replies: replies}
		events := runWorkspace(t, m, workspaceRequest(workspaceTool("read/readFile", "read_readFile")), w)
		term := terminalOf(t, events)
		if rounds == 7 {
			if term.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED || m.calls.Load() != 8 {
				t.Fatalf("7 rounds: terminal %+v after %d sends", term, m.calls.Load())
			}
			continue
		}
		if term.GetState() != sessionspb.TurnState_TURN_STATE_FAILED || !strings.Contains(term.GetError(), ErrTextToolRound) || m.calls.Load() != 8 {
			t.Fatalf("8 rounds: terminal %+v after %d sends", term, m.calls.Load())
		}
		if countKind(events, func(e *sessionspb.HarnessEvent) bool { return e.GetWorkspaceOutcome() != nil }) != 0 {
			t.Fatal("a failed turn journaled an outcome")
		}
	}
}

// 24 calls in all: a batch that would bring the turn to 25 is refused
// whole, before its first call; a call ID repeated from an earlier batch
// refuses the batch too.
func TestWorkspaceTurnBoundsItsCalls(t *testing.T) {
	batch := func(from, n int) route.Completion {
		c := route.Completion{}
		for i := range n {
			c.ToolCalls = append(c.ToolCalls, route.ToolCall{ID: fmt.Sprintf("c%d", from+i), Name: "read_readFile", Arguments: `{"filePath":"a.txt"}`})
		}
		return c
	}
	w := scratch(t)
	m := &scriptedToolModel{replies: []route.Completion{batch(0, 5), batch(5, 5), batch(10, 5), batch(15, 5), batch(20, 5), {Text: "never"}}}
	events := runWorkspace(t, m, workspaceRequest(workspaceTool("read/readFile", "read_readFile")), w)
	term := terminalOf(t, events)
	if term.GetState() != sessionspb.TurnState_TURN_STATE_FAILED || !strings.Contains(term.GetError(), "at most 24") {
		t.Fatalf("terminal = %+v", term)
	}
	if n := countKind(events, func(e *sessionspb.HarnessEvent) bool { return e.GetToolCall() != nil }); n != 20 {
		t.Fatalf("%d calls answered, want 20 (the fifth batch refused whole)", n)
	}

	m = &scriptedToolModel{replies: []route.Completion{batch(0, 2), batch(1, 2), {Text: "never"}}}
	events = runWorkspace(t, m, workspaceRequest(workspaceTool("read/readFile", "read_readFile")), w)
	if term := terminalOf(t, events); !strings.Contains(term.GetError(), "repeats a call ID of an earlier batch") {
		t.Fatalf("terminal = %+v", term)
	}
}

// A path outside the copy is a tool error the model sees, and the turn
// goes on; a turn whose copy is not registered sends nothing.
func TestWorkspaceTurnRefusesEscapesAndAMissingCopy(t *testing.T) {
	w := scratch(t)
	m := &scriptedToolModel{replies: []route.Completion{
		{ToolCalls: []route.ToolCall{{ID: "r", Name: "read_readFile", Arguments: `{"filePath":"../etc/passwd"}`}}},
		{Text: "could not"},
	}}
	events := runWorkspace(t, m, workspaceRequest(workspaceTool("read/readFile", "read_readFile")), w)
	if term := terminalOf(t, events); term.GetState() != sessionspb.TurnState_TURN_STATE_COMPLETED {
		t.Fatalf("terminal = %+v", term)
	}
	if got := m.seen[1].Messages[len(m.seen[1].Messages)-1].Content; !strings.HasPrefix(got, "Error: ") {
		t.Fatalf("the model saw %q", got)
	}

	srv := NewWithWorkspaces(func(string, route.Identity) (route.Model, error) { return m, nil }, nil, nil)
	s := &recordingStream{ctx: context.Background()}
	if err := srv.turn(workspaceRequest(workspaceTool("read/readFile", "read_readFile")), s); err != nil {
		t.Fatal(err)
	}
	if term := terminalOf(t, s.events); !strings.Contains(term.GetError(), ErrTextWorkspace) || len(s.events) != 1 {
		t.Fatalf("events = %v", s.events)
	}
}

// A workspace source only on the workspace harness, for a tool the
// workspace answers; the workspace harness needs its workspace.
func TestWorkspaceRequestsAreChecked(t *testing.T) {
	bad := []*sessionspb.HarnessTurnRequest{
		toolRequest(workspaceTool("read/readFile", "read_readFile")),
		workspaceRequest(workspaceTool("execute/runInTerminal", "execute_runInTerminal")),
		func() *sessionspb.HarnessTurnRequest {
			r := workspaceRequest(workspaceTool("read/readFile", "read_readFile"))
			r.Workspace = nil
			return r
		}(),
	}
	for i, req := range bad {
		if err := checkRequest(req); err == nil {
			t.Errorf("request %d was accepted", i)
		}
	}
	if err := checkRequest(workspaceRequest(workspaceTool("read/readFile", "read_readFile"))); err != nil {
		t.Fatal(err)
	}
}
