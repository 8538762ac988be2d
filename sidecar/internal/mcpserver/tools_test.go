package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// TestToolFilesThroughMCP: MCP Run and Test run a tool-declaring file on
// the tool harness (recorded, stubbed and Disabled calls) and refuse it
// beside a broken kmx.yaml; its tools are never dropped.
func TestToolFilesThroughMCP(t *testing.T) {
	cs := connectFresh(t)

	var rep runner.Report
	decode(t, call(t, cs, "Test", map[string]any{"file": testdataFile(t, "tools", "merged-prs.agent.md")}), &rep)
	if rep.Verdict != runner.VerdictPass || len(rep.ToolSettings) != 1 {
		t.Fatalf("Test = %q, settings %+v: %+v", rep.Verdict, rep.ToolSettings, rep.Examples)
	}
	for _, ex := range rep.Examples {
		if ex.ToolCalls != 1 || len(ex.ToolSources) != 1 {
			t.Errorf("example %s: %d calls, sources %+v", ex.ID, ex.ToolCalls, ex.ToolSources)
		}
	}

	var run runner.Report
	decode(t, call(t, cs, "Run", map[string]any{"file": testdataFile(t, "tools", "disabled/merged-prs.agent.md")}), &run)
	if run.Verdict != runner.VerdictPass || run.ToolSettings[0].State != "Disabled" || run.Examples[0].ToolCalls != 0 {
		t.Fatalf("Run disabled = %q %+v %+v", run.Verdict, run.ToolSettings, run.Examples)
	}

	res := call(t, cs, "Test", map[string]any{"file": testdataFile(t, "tools", "refused/merged-prs.agent.md")})
	if !res.IsError || !strings.Contains(text(res), "kmx.yaml") {
		t.Errorf("refusal does not name kmx.yaml: %s", text(res))
	}
}
