package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// toolAgentPair is a tool-declaring agent file with its examples beside it
// (NAME.agent.examples.yaml), as real files keep them. "recorded" has a
// recording for search_docs with the arguments the server's model sends;
// fetch_page has none, so it answers the stub. "unrecorded" has no
// recording at all: the model then gets two stubs, the server's rules do
// not match its send 2, and the answer fails the assertions.
const (
	toolAgentFile = "---\nname: release-notes\ndescription: Writes release notes from the docs.\ntools: [search_docs, fetch_page]\n---\n" +
		"You write release notes. Search the docs, fetch the notes page, and say what shipped.\n"
	toolExamplesFile = "# Examples for notes.agent.md.\n" +
		"- id: recorded\n  input: What shipped this week?\n  tools:\n    search_docs:\n      recorded:\n        calls:\n" +
		"          - arguments: {\"query\": \"release\"}\n            result: {\"pullRequests\": [\"MERGED-PR-12\"]}\n" +
		"  assert:\n    - contains: MERGED-PR-12\n    - contains: not available in this test\n" +
		"    - toolCalled: search_docs\n    - toolCalled: fetch_page\n" +
		"- id: unrecorded\n  input: And last week?\n  assert:\n    - contains: MERGED-PR-12\n"
)

// TestKmxTestToolCallsAgainstThirdPartyServer runs a tool-declaring agent
// through kmx test on an endpoint: the third-party mock server (mock-llm,
// its rules file making it a tool-calling model) requests a batch of two
// calls; the recorded tool gets its recorded result, the unrecorded one
// the stub, send 2 gets both, and the example passes on its assertions.
// The run then replays offline with zero model and tool calls.
func TestKmxTestToolCallsAgainstThirdPartyServer(t *testing.T) {
	endpoint := testutil.MockOpenAIWithRules(t, testutil.MockOpenAIToolRules) + "/v1"
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.agent.md")
	if err := os.WriteFile(file, []byte(toolAgentFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.agent.examples.yaml"), []byte(toolExamplesFile), 0o600); err != nil {
		t.Fatal(err)
	}
	const model = "kmx-mock-tools"
	h := home(t)

	t.Run("assertions hold", func(t *testing.T) {
		r := kmxEnv(t, h, nil, "test", file, "--endpoint", endpoint, "--model", model, "--json", "--example", "recorded")
		if r.code != ExitOK {
			t.Fatalf("exit %d, want %d; stderr %q\n%s", r.code, ExitOK, r.stderr, r.stdout)
		}
		var rep runner.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("report: %v\n%s", err, r.stdout)
		}
		if len(rep.Examples) != 1 {
			t.Fatalf("%d examples", len(rep.Examples))
		}
		ex := rep.Examples[0]
		if ex.Verdict != "pass" || !ex.Journaled || !ex.Verified || ex.ToolCalls != 2 {
			t.Fatalf("example %+v", ex)
		}
		want := []runner.ToolSource{{Name: "search_docs", Source: localtools.SourceRecorded}, {Name: "fetch_page", Source: localtools.SourceUnavailable}}
		if !reflect.DeepEqual(ex.ToolSources, want) {
			t.Errorf("toolSources %+v, want %+v", ex.ToolSources, want)
		}

		// Offline: the journal alone, no endpoint named, zero calls.
		in := kmxEnv(t, h, nil, "journal", "inspect", rep.RunID, "--json")
		if in.code != ExitOK {
			t.Fatalf("inspect exit %d: %s", in.code, in.stderr)
		}
		var got readback.Inspection
		if err := json.Unmarshal([]byte(in.stdout), &got); err != nil {
			t.Fatalf("inspection: %v\n%s", err, in.stdout)
		}
		if got.LiveCalls != 0 || len(got.Turns) != 1 {
			t.Fatalf("inspection: %d live calls, %d turns", got.LiveCalls, len(got.Turns))
		}
		turn := got.Turns[0]
		if turn.Answer == nil || !strings.Contains(*turn.Answer, "MERGED-PR-12") || len(turn.ToolCalls) != 2 {
			t.Fatalf("inspected turn %+v", turn)
		}
		for i, c := range turn.ToolCalls {
			if c.Source != want[i].Source || c.Name != want[i].Name || c.Result == nil {
				t.Errorf("inspected call %d = %+v", i+1, c)
			}
		}
		if !strings.Contains(*turn.ToolCalls[1].Result, "not available in this test") {
			t.Errorf("the unrecorded call's result is %q, want the stub", *turn.ToolCalls[1].Result)
		}
	})

	t.Run("assertions that do not hold fail", func(t *testing.T) {
		r := kmxEnv(t, h, nil, "test", file, "--endpoint", endpoint, "--model", model, "--json", "--example", "unrecorded")
		if r.code != ExitFailure {
			t.Fatalf("exit %d, want %d; stderr %q", r.code, ExitFailure, r.stderr)
		}
		var rep runner.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("report: %v\n%s", err, r.stdout)
		}
		ex := rep.Examples[0]
		want := []runner.ToolSource{{Name: "search_docs", Source: localtools.SourceUnavailable}, {Name: "fetch_page", Source: localtools.SourceUnavailable}}
		if ex.Verdict != "fail" || !ex.Verified || !reflect.DeepEqual(ex.ToolSources, want) {
			t.Fatalf("example %+v", ex)
		}
	})
}
