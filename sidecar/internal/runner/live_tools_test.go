//go:build kmxtest

package runner

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/ghread/ghreadtest"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// The live tests point ghread at the owned TLS fixture (ghreadtest, test
// builds only): no test reaches the network.

const liveRepo = "octo-org/Hello-World"

// liveToken is the fixture credential; not credential-shaped, so only its
// exact value identifies it.
const liveToken = "fixture-credential-value-4242"

var liveBinding = &localtools.Binding{Path: "tools.json", Name: localtools.GitHubTool, Repository: liveRepo,
	URL: localtools.GitHubMCPURL, CredentialEnv: "KMX_TEST_GH"}

// liveAgent calls the bound tool in each example; the fake model's second
// answer is the tool result, so the assertion sees what the read returned.
func liveAgent(examples string) string {
	return "---\ntools: [github_list_merged_prs]\n---\nList what was merged.\n\nCall the tool `github_list_merged_prs`\n\n## Examples\n\n```yaml\n" + examples + "```\n"
}

const pendingExample = `- id: weekly
  input: What was merged?
  tools:
    github_list_merged_prs:
      recorded:
        calls: []
  assert:
    - contains: "Add the tool harness"
    - toolCalled: github_list_merged_prs
`

var mergedItems = []ghreadtest.Item{
	{Number: 7, Title: "Add the tool harness", Repository: liveRepo, Merged: true},
	{Number: 8, Title: "Still open", Repository: liveRepo},
	{Number: 9, Title: "Other repository", Repository: "octo-org/Other", Merged: true},
	{Number: 10, Title: "Other letter case", Repository: "Octo-Org/hello-world", Merged: true},
}

// liveOptions reads the credential through a counting getenv.
func liveOptions(t *testing.T, home string, reads *int) Options {
	return Options{Options: invocation.Options{StateDir: home, Model: "fake", ToolBinding: liveBinding, Concurrency: 1, Getenv: func(name string) string {
		if name == "KMX_TEST_GH" {
			*reads++
			return liveToken
		}
		return ""
	}}}
}

// TestLiveReadAnswersTheBoundTool: a model-selected call of the bound tool
// executes through ghread once per call (the credential read once per
// invocation), only {number, title} of merged items of the bound
// repository reach the model, the source is live everywhere it is
// reported, and the journal replays offline with no binding, credential or
// network call.
func TestLiveReadAnswersTheBoundTool(t *testing.T) {
	f := ghreadtest.Use(t, ghreadtest.Options{Items: mergedItems})
	home := testutil.PrivateDir(t)
	reads := 0
	req := toolAgent(t, liveAgent(pendingExample+strings.ReplaceAll(pendingExample, "weekly", "again")), "")
	rep, err := Test(context.Background(), liveOptions(t, home, &reads), req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictPass {
		t.Fatalf("verdict %s: %+v", rep.Verdict, rep.Examples)
	}
	for _, ex := range rep.Examples {
		if ex.ToolCalls != 1 || len(ex.ToolSources) != 1 || ex.ToolSources[0] != (ToolSource{Name: localtools.GitHubTool, Source: localtools.SourceLive}) {
			t.Errorf("example %s: toolCalls %d, sources %+v", ex.ID, ex.ToolCalls, ex.ToolSources)
		}
	}
	if reads != 1 {
		t.Errorf("read the credential variable %d times, want once per invocation", reads)
	}
	if f.Calls() != 2 {
		t.Errorf("the fixture answered %d reads, want one per call (2)", f.Calls())
	}
	var results []string
	for _, recs := range readJournal(t, home, rep.RunID) {
		for _, r := range recs {
			switch r.Kind {
			case journal.KindSessionPlaced:
				var p journal.SessionPlaced
				if err := journal.Decode(r.Payload, &p); err != nil {
					t.Fatal(err)
				}
				if p.Purpose == "agent" && (len(p.Tools) != 1 || p.Tools[0].Source != localtools.SourceLive || !p.Tools[0].Pending) {
					t.Errorf("frozen tool set %+v: want the bound name live and pending", p.Tools)
				}
			case journal.KindToolResult:
				var tr journal.ToolResult
				if err := journal.Decode(r.Payload, &tr); err != nil {
					t.Fatal(err)
				}
				results = append(results, tr.Source+" "+tr.Result)
			}
		}
	}
	want := `live {"repository":"octo-org/Hello-World","pullRequests":[{"number":7,"title":"Add the tool harness"}]}`
	if len(results) != 2 || results[0] != want || results[1] != want {
		t.Fatalf("journaled results %q, want twice %q", results, want)
	}
	raw, err := os.ReadFile(rep.JournalPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), liveToken) {
		t.Error("the journal holds the credential")
	}

	// Offline inspection: no binding, no credential, no network.
	os.Unsetenv(ghreadtest.EndpointEnv)
	before := f.Requests()
	in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if in.LiveCalls != 0 || in.Summary.Verified != 2 || f.Requests() != before {
		t.Fatalf("inspection: live calls %d, verified %d, fixture requests %d -> %d", in.LiveCalls, in.Summary.Verified, before, f.Requests())
	}
	for _, turn := range in.Turns {
		if len(turn.ToolCalls) != 1 || turn.ToolCalls[0].Source != localtools.SourceLive {
			t.Errorf("inspected calls %+v", turn.ToolCalls)
		}
	}
}

// TestLiveReadFailureIsUnknown: an incomplete search, a schema change, a
// refused credential and a title holding the credential each fail the
// call: the example is unknown, later examples are not sent, and nothing
// is retried.
func TestLiveReadFailureIsUnknown(t *testing.T) {
	two := pendingExample + strings.ReplaceAll(pendingExample, "weekly", "later")
	for _, tc := range []struct {
		name string
		o    ghreadtest.Options
		want string
	}{
		{"incomplete results", ghreadtest.Options{Items: mergedItems, Incomplete: true}, "incomplete"},
		{"schema change", ghreadtest.Options{Items: mergedItems, ChangedSchema: true}, "input schema changed"},
		{"401", ghreadtest.Options{Status: http.StatusUnauthorized}, "HTTP 401"},
		{"title holds the credential", ghreadtest.Options{Items: []ghreadtest.Item{{Number: 1, Title: "leak " + liveToken, Repository: liveRepo, Merged: true}}}, "holds the configured credential"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := ghreadtest.Use(t, tc.o)
			home := testutil.PrivateDir(t)
			reads := 0
			rep, err := Test(context.Background(), liveOptions(t, home, &reads), toolAgent(t, liveAgent(two), ""))
			if err != nil {
				t.Fatal(err)
			}
			first, later := rep.Examples[0], rep.Examples[1]
			if first.Verdict != VerdictUnknown || !strings.Contains(first.Message, tc.want) {
				t.Errorf("first example %s %q, want unknown saying %q", first.Verdict, first.Message, tc.want)
			}
			if later.Verdict != VerdictUnknown || !strings.HasPrefix(later.Message, "not sent") {
				t.Errorf("later example %s %q, want unknown and not sent", later.Verdict, later.Message)
			}
			if f.Calls() > 1 {
				t.Errorf("the fixture answered %d reads; nothing is retried", f.Calls())
			}
			raw, _ := os.ReadFile(rep.JournalPath)
			if strings.Contains(string(raw), liveToken) || strings.Contains(first.Message, liveToken) {
				t.Error("the credential reached the journal or the result")
			}
			if rep.Capture != nil {
				t.Errorf("a failed read was captured: %+v", rep.Capture)
			}
			// The failed run inspects offline: no binding, no credential,
			// no request; the failed turn stays failed.
			before := f.Requests()
			in, err := readback.Inspect(context.Background(), journal.Dir(home), rep.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if in.LiveCalls != 0 || in.Summary.Verified != 0 || in.Summary.Failed != 1 || f.Requests() != before {
				t.Errorf("inspection: live calls %d, summary %+v, fixture requests %d -> %d", in.LiveCalls, in.Summary, before, f.Requests())
			}
		})
	}
}

// TestCaptureJourney: one agent file goes pending, then captured live from
// the fixture (a checked edit that keeps every other byte), then tested
// offline from its recording with zero network calls; the capture is
// written once.
func TestCaptureJourney(t *testing.T) {
	f := ghreadtest.Use(t, ghreadtest.Options{Items: mergedItems})
	home := testutil.PrivateDir(t)
	reads := 0
	body := liveAgent(pendingExample)
	req := toolAgent(t, body, "")
	rep, err := Test(context.Background(), liveOptions(t, home, &reads), req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictPass || rep.Capture == nil || rep.Capture.Status != CaptureSaved {
		t.Fatalf("verdict %s, capture %+v", rep.Verdict, rep.Capture)
	}
	got, err := os.ReadFile(req.Path)
	if err != nil {
		t.Fatal(err)
	}
	call := `[{"arguments": {}, "result": {"repository":"octo-org/Hello-World","pullRequests":[{"number":7,"title":"Add the tool harness"}]}}]`
	if want := strings.Replace(body, "calls: []", "calls: "+call, 1); string(got) != want {
		t.Fatalf("captured file:\n%s\nwant:\n%s", got, want)
	}
	if rep.Agent.Revision != agentfile.Parse(req.Path, []byte(body)).Agent.Revision {
		t.Error("the result does not keep the executed revision")
	}
	if rep.Capture.Revision != agentfile.Parse(req.Path, got).Agent.Revision || rep.Capture.Revision == rep.Agent.Revision {
		t.Errorf("capture revision %s does not name the saved file", rep.Capture.Revision)
	}
	if len(rep.Capture.Captured) != 1 || rep.Capture.Captured[0] != (CapturedTool{Example: "weekly", Tool: localtools.GitHubTool}) {
		t.Errorf("captured %+v", rep.Capture.Captured)
	}

	// The next test runs from the recording: zero network calls, even with
	// the binding still given, and nothing is captured again.
	before := f.Requests()
	again, err := Test(context.Background(), liveOptions(t, home, &reads), invocation.Request{Path: req.Path, Source: got})
	if err != nil {
		t.Fatal(err)
	}
	if again.Verdict != VerdictPass || f.Requests() != before || again.Capture != nil {
		t.Fatalf("offline test: verdict %s, fixture requests %d -> %d, capture %+v", again.Verdict, before, f.Requests(), again.Capture)
	}
	if src := again.Examples[0].ToolSources; len(src) != 1 || src[0].Source != localtools.SourceRecorded {
		t.Errorf("offline sources %+v, want recorded", src)
	}
	if now, _ := os.ReadFile(req.Path); string(now) != string(got) {
		t.Error("the second run rewrote the file")
	}
	// And with no binding at all.
	offline, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: home, Model: "fake"}}, invocation.Request{Path: req.Path, Source: got})
	if err != nil || offline.Verdict != VerdictPass || f.Requests() != before {
		t.Fatalf("unbound offline test: %v %v, requests %d", offline.Verdict, err, f.Requests())
	}
}

// TestCaptureRefusedWhenTheFileChanged: a file edited during the run is
// left exactly as edited, the capture is refused and the run is not a
// full success.
func TestCaptureRefusedWhenTheFileChanged(t *testing.T) {
	ghreadtest.Use(t, ghreadtest.Options{Items: mergedItems})
	home := testutil.PrivateDir(t)
	reads := 0
	req := toolAgent(t, liveAgent(pendingExample), "")
	edited := string(req.Source) + "\n<!-- edited during the run -->\n"
	opts := liveOptions(t, home, &reads)
	opts.OnFinished = func(ExampleResult) {
		if err := os.WriteFile(req.Path, []byte(edited), 0o600); err != nil {
			t.Error(err)
		}
	}
	rep, err := Test(context.Background(), opts, req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Capture == nil || rep.Capture.Status != CaptureRefused || !strings.Contains(rep.Capture.Message, "changed since the run started") {
		t.Fatalf("capture %+v, want refused", rep.Capture)
	}
	if rep.Verdict == VerdictPass || rep.Examples[0].Verdict != VerdictPass {
		t.Errorf("file verdict %s (example %s): a refused capture withholds full success only", rep.Verdict, rep.Examples[0].Verdict)
	}
	if now, _ := os.ReadFile(req.Path); string(now) != edited {
		t.Error("the changed file was touched")
	}
}

// TestCaptureAsEditAndUncalledTools: the editor gets the capture as an
// edit of the `[]` (nothing written); a tool the model did not call stays
// pending and nothing is read.
func TestCaptureAsEditAndUncalledTools(t *testing.T) {
	f := ghreadtest.Use(t, ghreadtest.Options{Items: mergedItems})
	home := testutil.PrivateDir(t)
	reads := 0
	req := toolAgent(t, liveAgent(pendingExample), "")
	opts := liveOptions(t, home, &reads)
	opts.CaptureAsEdit = true
	rep, err := Test(context.Background(), opts, req)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Capture
	if c == nil || c.Status != CaptureEdit || len(c.Edits) != 1 {
		t.Fatalf("capture %+v", c)
	}
	e := c.Edits[0]
	if string(req.Source[e.Range.Start.Offset:e.Range.End.Offset]) != "[]" || e.Path != req.Path || !strings.HasPrefix(e.NewText, `[{"arguments": {}, "result": {`) {
		t.Errorf("edit %+v", e)
	}
	if now, _ := os.ReadFile(req.Path); string(now) != string(req.Source) {
		t.Error("an edit-mode capture wrote the file")
	}

	uncalled := strings.Replace(liveAgent(pendingExample), "Call the tool `github_list_merged_prs`", "Reply with exactly `Add the tool harness`.", 1)
	uncalled = strings.Replace(uncalled, "    - toolCalled: github_list_merged_prs\n", "", 1)
	req2 := toolAgent(t, uncalled, "")
	calls := f.Calls()
	rep2, err := Test(context.Background(), liveOptions(t, home, &reads), req2)
	if err != nil || rep2.Verdict != VerdictPass || rep2.Capture != nil || f.Calls() != calls {
		t.Fatalf("uncalled: %v %v capture %+v, reads %d -> %d", rep2.Verdict, err, rep2.Capture, calls, f.Calls())
	}
	if now, _ := os.ReadFile(req2.Path); string(now) != uncalled {
		t.Error("an uncalled tool's pending recording was touched")
	}
}

// TestLiveReadStaysInsideTheExampleDeadline: a read that never answers is
// cut by the example's deadline (well before its own 30 s): the example is
// unknown, the later one is not sent, and the read is not retried.
func TestLiveReadStaysInsideTheExampleDeadline(t *testing.T) {
	f := ghreadtest.Use(t, ghreadtest.Options{Hang: true})
	home := testutil.PrivateDir(t)
	reads := 0
	opts := liveOptions(t, home, &reads)
	opts.ExampleDeadline = 500 * time.Millisecond
	rep, err := Test(context.Background(), opts, toolAgent(t, liveAgent(pendingExample+strings.ReplaceAll(pendingExample, "weekly", "later")), ""))
	if err != nil {
		t.Fatal(err)
	}
	if ex := rep.Examples[0]; ex.Verdict != VerdictUnknown || !strings.Contains(ex.Message, "deadline") {
		t.Errorf("first example %s %q, want unknown past its deadline", ex.Verdict, ex.Message)
	}
	if ex := rep.Examples[1]; ex.Verdict != VerdictUnknown || !strings.HasPrefix(ex.Message, "not sent") {
		t.Errorf("later example %s %q, want not sent", ex.Verdict, ex.Message)
	}
	if f.Calls() != 1 || rep.Capture != nil {
		t.Errorf("fixture calls %d (want 1, no retry), capture %+v", f.Calls(), rep.Capture)
	}
}
