package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/state"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// copyDemoWorkspace copies the fix-add demo (agent file and fixture) into a
// temporary folder, with the agent's text changed by edit.
func copyDemoWorkspace(t *testing.T, edit func(string) string) invocation.Request {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "..", "testdata", "demo")
	err := filepath.WalkDir(filepath.Join(src, "fixtures", "calc"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	body := string(demo(t, "fix-add.agent.md").Source)
	if edit != nil {
		body = edit(body)
	}
	path := filepath.Join(dir, "fix-add.agent.md")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return invocation.Request{Path: path, Source: []byte(body)}
}

// scratchLeft lists the scratch copies left under the state folder, each
// as RUN/COPY (copies are kept per run), and anything else there by name.
func scratchLeft(t *testing.T, home string) []string {
	t.Helper()
	parent := filepath.Join(home, "local-preview", scratchFolder)
	runs, err := os.ReadDir(parent)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, r := range runs {
		if !r.IsDir() || !journal.ValidRunID(r.Name()) {
			out = append(out, r.Name())
			continue
		}
		copies, err := os.ReadDir(filepath.Join(parent, r.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range copies {
			if c.Name() != keptMarker {
				out = append(out, r.Name()+"/"+c.Name())
			}
		}
	}
	return out
}

// The demo agent edits its fixture on the fake model: the read and the edit
// answered in a scratch copy, every file assertion judged from the
// journaled outcome, the copy removed when the run ends, the fixture never
// written, the turn's outcome journaled, and a re-grade (--from) passing
// again with zero model calls and the fixture gone.
func TestDemoAgentEditsItsFixtureWorkspace(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := copyDemoWorkspace(t, nil)
	before, _ := os.ReadFile(filepath.Join(filepath.Dir(req.Path), "fixtures", "calc", "calc", "add.go"))
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, req)
	if err != nil {
		t.Fatal(err)
	}
	ex := rep.Examples[0]
	if rep.Verdict != VerdictPass || !ex.Verified || len(ex.Assertions) != 6 {
		t.Fatalf("verdict %s, example %+v", rep.Verdict, ex)
	}
	if ex.Workspace == nil || ex.Workspace.Fixture != "fixtures/calc" || len(ex.Workspace.Changed) != 1 ||
		ex.Workspace.Changed[0].Path != "calc/add.go" || ex.Workspace.Counts.Modified != 1 {
		t.Fatalf("workspace summary = %+v", ex.Workspace)
	}
	if left := scratchLeft(t, home); len(left) != 0 {
		t.Fatalf("scratch copies left after the run: %v", left)
	}
	after, _ := os.ReadFile(filepath.Join(filepath.Dir(req.Path), "fixtures", "calc", "calc", "add.go"))
	if string(before) != string(after) {
		t.Fatal("the run wrote the user's fixture")
	}
	var kinds []journal.Kind
	for _, recs := range readJournal(t, home, rep.RunID) {
		for _, r := range recs {
			kinds = append(kinds, r.Kind)
		}
	}
	n := 0
	for _, k := range kinds {
		if k == journal.KindModelRequest {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d model sends journaled, want 3: %v", n, kinds)
	}
	if kinds[len(kinds)-2] != journal.KindWorkspaceOutcome {
		t.Fatalf("the record before the terminal is %s, want the workspace outcome", kinds[len(kinds)-2])
	}
	if rep.Agent.SettingsRevision == "" {
		t.Fatal("the fixture's hash is in no revision")
	}

	// Re-grade with the fixture gone: the outcome comes from the journal.
	if err := os.RemoveAll(filepath.Join(filepath.Dir(req.Path), "fixtures")); err != nil {
		t.Fatal(err)
	}
	rg, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}, FromRun: rep.RunID}, req)
	if err != nil {
		t.Fatal(err)
	}
	if rg.Verdict != VerdictPass || rg.Regrade == nil || rg.Regrade.AgentCalls != 0 || rg.Regrade.Replayed != 1 {
		t.Fatalf("re-grade: verdict %s, %+v, %+v", rg.Verdict, rg.Regrade, rg.Examples)
	}
}

// A wrong edit fails the file assertions, each saying what it saw;
// --keep-workspace keeps the copy and names it.
func TestWrongEditFailsAndKeepWorkspaceKeepsTheCopy(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := copyDemoWorkspace(t, func(s string) string {
		return strings.Replace(s, "with `return a + b`", "with `return a * b`", 1)
	})
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}, KeepWorkspace: true}, req)
	if err != nil {
		t.Fatal(err)
	}
	ex := rep.Examples[0]
	if ex.Verdict != VerdictFail || ex.Assertions[0].Outcome != judge.Fail || !strings.Contains(ex.Assertions[0].Message, "does not contain") {
		t.Fatalf("example = %+v", ex)
	}
	if ex.KeptWorkspace == "" || len(scratchLeft(t, home)) != 1 {
		t.Fatalf("kept %q, left %v", ex.KeptWorkspace, scratchLeft(t, home))
	}
	b, err := os.ReadFile(filepath.Join(ex.KeptWorkspace, "calc", "add.go"))
	if err != nil || !strings.Contains(string(b), "return a * b") {
		t.Fatalf("kept copy holds %q (%v)", b, err)
	}
	if fi, err := os.Stat(ex.KeptWorkspace); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("kept copy mode %v (%v)", fi.Mode(), err)
	}
	if o := ex.WorkspaceOutcome(); o == nil || len(o.Changes) != 1 {
		t.Fatalf("outcome for the CLI's diff = %+v", o)
	}
}

// A run cancelled while the example's turn is in flight leaves no pass,
// and its scratch copy, which existed during the turn, is removed.
func TestCancelledWorkspaceExampleLeavesNoPassAndNoCopy(t *testing.T) {
	home := testutil.PrivateDir(t)
	ex := &scriptedExecutor{block: true, started: make(chan struct{})}
	started := ex.started
	ctx, cancel := context.WithCancel(context.Background())
	during := make(chan []string, 1)
	go func() { <-started; during <- scratchLeft(t, home); cancel() }()
	rep, err := Test(ctx, Options{Options: invocation.Options{StateDir: home}, NewExecutor: withExecutor(ex)}, copyDemoWorkspace(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := <-during; len(got) != 1 {
		t.Fatalf("scratch copies during the turn: %v", got)
	}
	if rep.Examples[0].Verdict == VerdictPass || rep.Verdict == VerdictPass {
		t.Fatalf("a cancelled workspace example passed: %+v", rep.Examples[0])
	}
	if ws := ex.calls[0].Workspace; ws == nil || ws.GetKey() == "" || ws.GetFixture() != "fixtures/calc" || !strings.HasPrefix(ws.GetHash(), "sha256:") {
		t.Fatalf("turn workspace = %v", ws)
	}
	if left := scratchLeft(t, home); len(left) != 0 {
		t.Fatalf("scratch copies left after cancellation: %v", left)
	}
}

// A run killed outright never removed its scratch copies: a later run's
// start removes them (issue 27), never the copies of a run that is still
// executing (its journal lock held), nor kept ones, nor a folder kmx did
// not name; the later run removes its own folder when it ends.
func TestLaterRunRemovesAKilledRunsScratchNeverAnExecutingOne(t *testing.T) {
	ctx := context.Background()
	home := testutil.PrivateDir(t)
	dir, err := journalDir(home)
	if err != nil {
		t.Fatal(err)
	}
	meta := journal.RunMeta{KmxVersion: "t", AgentID: "a", AgentRevision: "r", Command: "test"}
	executing, err := journal.Create(ctx, dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	defer executing.Close()
	// Closed without finishing: its lock is released, as the kernel
	// releases a killed process's.
	var gone [2]string
	for i := range gone {
		j, err := journal.Create(ctx, dir, meta)
		if err != nil {
			t.Fatal(err)
		}
		gone[i] = j.ID()
		j.Close()
	}
	killed, kept := gone[0], gone[1]
	copyIn := func(parts ...string) {
		t.Helper()
		d, err := state.EnsurePrivateDir(home, append([]string{"local-preview", scratchFolder}, parts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "add.go"), []byte("package calc\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyIn(executing.ID(), "ws-executing")
	copyIn(killed, "ws-killed")
	copyIn(kept, "ws-kept")
	if err := os.WriteFile(filepath.Join(home, "local-preview", scratchFolder, kept, keptMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	copyIn("ws-not-a-run")

	rep, err := Test(ctx, Options{Options: invocation.Options{StateDir: home}}, copyDemoWorkspace(t, nil))
	if err != nil || rep.Verdict != VerdictPass {
		t.Fatalf("later run: %v %+v", err, rep)
	}
	want := []string{executing.ID() + "/ws-executing", kept + "/ws-kept", "ws-not-a-run"}
	slices.Sort(want)
	if got := scratchLeft(t, home); !slices.Equal(got, want) {
		t.Fatalf("left after a later run: %v, want %v", got, want)
	}

	// Once it is no longer executing, its copies go with the next start.
	if err := executing.Finish(ctx, journal.StatusFinished); err != nil {
		t.Fatal(err)
	}
	if _, err := Test(ctx, Options{Options: invocation.Options{StateDir: home}}, copyDemoWorkspace(t, nil)); err != nil {
		t.Fatal(err)
	}
	if got, want := scratchLeft(t, home), []string{kept + "/ws-kept", "ws-not-a-run"}; !slices.Equal(got, want) {
		t.Fatalf("left after the executing run finished: %v, want %v", got, want)
	}
}

// A re-grade refuses an example whose fixture changed since the source run:
// the journaled outcome answers for the files it was made from, not for
// today's.
func TestRegradeRefusesAChangedFixture(t *testing.T) {
	home := testutil.PrivateDir(t)
	req := copyDemoWorkspace(t, nil)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}}, req)
	if err != nil || rep.Verdict != VerdictPass {
		t.Fatalf("source run: %v %+v", err, rep)
	}
	readme := filepath.Join(filepath.Dir(req.Path), "fixtures", "calc", "NOTES.txt")
	if err := os.WriteFile(readme, []byte("a file added after the run\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rg, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home}, FromRun: rep.RunID}, req)
	if err != nil {
		t.Fatal(err)
	}
	ex := rg.Examples[0]
	if ex.Verdict != VerdictRefused || !strings.Contains(ex.Message, "the fixture workspace fixtures/calc changed since run "+rep.RunID) ||
		rg.Regrade == nil || rg.Regrade.AgentCalls != 0 || rg.Regrade.Replayed != 0 {
		t.Fatalf("re-grade after the fixture changed: %s %q %+v", ex.Verdict, ex.Message, rg.Regrade)
	}
}

// TestWorkspaceExampleReadsThenEditsOnAnEndpoint: on a real
// OpenAI-compatible endpoint, a workspace example takes the harness's
// room for a loop: send 1 reads, send 2 (after the read's result) edits,
// send 3 answers. The route does not hold the reply after tool results to
// kmx-local-tools-v1's "text only" rule (the harness bounds the sends):
// the example passes, replay-verified, with three requests.
func TestWorkspaceExampleReadsThenEditsOnAnEndpoint(t *testing.T) {
	var sends atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		sends.Add(1)
		results := 0
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results++
			}
		}
		call := func(id, name, args string) []any {
			return []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}}
		}
		message, finish := map[string]any{"role": "assistant", "content": nil}, "tool_calls"
		switch results {
		case 0:
			message["tool_calls"] = call("read", "read_readFile", `{"filePath":"calc/add.go","startLine":1,"endLine":100}`)
		case 1:
			message["tool_calls"] = call("edit", "edit_editFiles", `{"filePath":"calc/add.go","oldString":"return a - b","newString":"return a + b"}`)
		default:
			message["content"], finish = "Fixed the sign in calc/add.go.", "stop"
		}
		body, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	home := testutil.PrivateDir(t)
	req := copyDemoWorkspace(t, func(s string) string { return strings.Replace(s, "model: fake", "model: "+compatAgentModel, 1) })
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Endpoint: srv.URL + "/v1"}}, req)
	if err != nil {
		t.Fatal(err)
	}
	ex := rep.Examples[0]
	if rep.Verdict != VerdictPass || !ex.Verified || ex.ToolCalls != 2 {
		t.Fatalf("verdict %s: %s %q (%d calls)", rep.Verdict, ex.Verdict, ex.Message, ex.ToolCalls)
	}
	if n := sends.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (read, edit, answer)", n)
	}
}
