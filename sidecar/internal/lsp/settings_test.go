package lsp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

// TestSettingsReachTheRunner shows settings are typed and used: a model
// override from initializationOptions decides the route, a refused
// didChangeConfiguration (credential value) is announced and ignored, and
// an accepted one replaces the settings.
func TestSettingsReachTheRunner(t *testing.T) {
	key := "sk-" + strings.Repeat("q7", 12)
	path := writeAgent(t, "greeter.agent.md", greeter)
	c := startServer(t, lsp.Options{})
	// A model that needs an endpoint: the run is refused naming it.
	c.initialize(lsp.InitializationOptions{ProtocolVersion: lsp.ProtocolVersion, Settings: lsp.Settings{Model: "llama3"}})
	uri := fileURI(path)
	var res lsp.ReportResult
	c.mustCall(lsp.MethodRun, lsp.ExampleParams{URI: uri, ExampleID: "first"}, &res)
	if res.Report.Verdict != "refused" || !strings.Contains(res.Report.Refusal.Message, "llama3") {
		t.Fatalf("with model llama3 and no endpoint: %+v", res.Report.Refusal)
	}

	from := c.count()
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"kmx": map[string]any{"model": "fake", "keyEnv": key}}})
	m, _ := c.waitMessage(from, "window/showMessage", nil)
	if !strings.Contains(string(m.Params), "credential-shaped") || strings.Contains(string(m.Params), key) {
		t.Fatalf("showMessage = %s; want a refusal that never echoes the value", m.Params)
	}
	// Ignored: still llama3.
	c.mustCall(lsp.MethodRun, lsp.ExampleParams{URI: uri, ExampleID: "first"}, &res)
	if res.Report.Verdict != "refused" {
		t.Fatalf("a refused settings object was applied: %+v", res.Report)
	}
	raw, _ := json.Marshal(c.all())
	if strings.Contains(string(raw), key) {
		t.Fatal("a message from the server carries the credential value")
	}

	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"kmx": map[string]any{"model": "fake"}}})
	c.mustCall(lsp.MethodRun, lsp.ExampleParams{URI: uri, ExampleID: "first"}, &res)
	if res.Report.Verdict != "pass" {
		t.Fatalf("after model fake: %+v", res.Report)
	}
	// A per-request override beats the settings.
	c.mustCall(lsp.MethodRun, lsp.ExampleParams{URI: uri, ExampleID: "first", Model: "llama3"}, &res)
	if res.Report.Verdict != "refused" {
		t.Fatalf("per-request model was ignored: %+v", res.Report)
	}
}

func TestExplainAfterAFailingTest(t *testing.T) {
	path := writeAgent(t, "greeter.agent.md", greeter)
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	uri := fileURI(path)
	var res lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri}, &res)
	if res.Report.Verdict != "fail" {
		t.Fatalf("test verdict %q, want fail", res.Report.Verdict)
	}
	var ex lsp.ExplainResult
	c.mustCall(lsp.MethodExplain, lsp.ExplainParams{URI: uri}, &ex)
	exp := ex.Explanation
	if ex.Label != "local preview" || len(exp.Records) != 1 {
		t.Fatalf("explanation = %+v", exp)
	}
	rec := exp.Records[0]
	if rec.Relation != "current" || len(rec.Examples) != 1 || rec.Examples[0].ID != "second" || rec.Examples[0].Deciding == nil {
		t.Fatalf("record = %+v", rec)
	}
	// Edit the buffer: the same record is now history.
	c.open(uri, 2, greeter+"\n")
	c.mustCall(lsp.MethodExplain, lsp.ExplainParams{URI: uri}, &ex)
	if got := ex.Explanation.Records[0].Relation; got != "historical" {
		t.Fatalf("after an edit the record is %q, want historical", got)
	}
}
