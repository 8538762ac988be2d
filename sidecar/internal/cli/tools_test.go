package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// TestDeclaredToolsNeverPassThroughTheCLI: the file a new user tried (a
// declared tool, a broken kmx.yaml beside it, a contains assertion) is
// refused by kmx test and kmx run with exit 2, and creates nothing; with
// kmx.yaml fixed it runs on the tool harness and says so in the report.
func TestDeclaredToolsNeverPassThroughTheCLI(t *testing.T) {
	body := "---\ntools: [github_list_merged_prs]\n---\nReply with exactly `No pull requests were merged`.\n\n## Examples\n\n```yaml\n- id: weekly\n  input: What was merged?\n  assert:\n    - contains: merged\n```\n"
	p := writeAgent(t, body)
	settings := filepath.Join(filepath.Dir(p), "kmx.yaml")
	if err := os.WriteFile(settings, []byte("tools:\n  github_list_merged_prs: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := home(t)
	for _, args := range [][]string{{"test", p, "--model", "fake"}, {"run", p, "--model", "fake"}, {"test", p, "--model", "fake", "--json"}} {
		r := kmx(t, h, args...)
		if r.code != 2 || !strings.Contains(r.stderr+r.stdout, "kmx.yaml") {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s", args, r.code, r.stdout, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(h); len(entries) != 0 {
		t.Errorf("refusals created %d entries in the state folder", len(entries))
	}

	if err := os.WriteFile(settings, []byte("tools:\n  github_list_merged_prs: Enabled\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := kmx(t, h, "test", p, "--model", "fake", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Verdict      string
		ToolSettings []struct{ Name, State string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "pass" || len(rep.ToolSettings) != 1 || rep.ToolSettings[0].State != "Enabled" {
		t.Errorf("report = %+v", rep)
	}
}

// TestCLIShowsToolCallsAndSources: the text output, the footer and JUnit
// name each called tool's source and the frozen settings, never a result.
func TestCLIShowsToolCallsAndSources(t *testing.T) {
	h := home(t)
	file := filepath.Join("..", "..", "..", "testdata", "tools", "merged-prs.agent.md")
	junit := filepath.Join(t.TempDir(), "out.xml")
	r := kmx(t, h, "test", file, "--junit", junit)
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"tools: 1 call: github_list_merged_prs (recorded)", "tools: 1 call: github_list_merged_prs (unavailable)", "tools: 1 declared, none disabled · 1 offered: 1 recorded"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output does not say %q:\n%s", want, r.stdout)
		}
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`name="tools" value="1 declared, none disabled · 1 offered: 1 recorded"`, `name="toolSource" value="github_list_merged_prs=recorded"`, `name="toolCalls" value="1"`} {
		if !strings.Contains(string(x), want) {
			t.Errorf("JUnit lacks %s:\n%s", want, x)
		}
	}
	if strings.Contains(r.stdout+string(x), "pullRequests") {
		t.Errorf("a tool result reached the output")
	}
}

// TestToolBindingsFlagRefusesAtStartup: kmx test, kmx run and kmx mcp read
// --tool-bindings at startup; a malformed file (here: an endpoint other
// than the fixed one, and a missing file) exits 2 naming the flag and the
// file, and creates nothing in the state folder.
func TestToolBindingsFlagRefusesAtStartup(t *testing.T) {
	body := "---\ntools: [github_list_merged_prs]\n---\nReply with exactly `No pull requests were merged`.\n\n## Examples\n\n```yaml\n- id: weekly\n  input: What was merged?\n  assert:\n    - contains: merged\n```\n"
	p := writeAgent(t, body)
	bad := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(bad, []byte(`{"schemaVersion": "kmx.local-tools/v1", "bindings": [{"name": "github_list_merged_prs", "endpointRef": "e", "repository": "a/b"}], "endpoints": {"e": {"url": "https://example.com/mcp", "credentialEnv": "T"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := home(t)
	for _, args := range [][]string{
		{"test", p, "--model", "fake", "--tool-bindings", bad},
		{"run", p, "--model", "fake", "--tool-bindings", bad},
		{"mcp", "--tool-bindings", bad},
		{"test", p, "--model", "fake", "--tool-bindings", bad + ".missing"},
		{"test", p, "--model", "fake", "--tool-bindings", ""},
	} {
		r := kmx(t, h, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "tool-bindings") {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := kmx(t, h, "test", p, "--model", "fake", "--tool-bindings", bad); !strings.Contains(r.stderr, "not the one supported endpoint") {
		t.Errorf("the refusal does not say what is wrong: %s", r.stderr)
	}
	if entries, _ := os.ReadDir(h); len(entries) != 0 {
		t.Errorf("refusals created %d entries in the state folder", len(entries))
	}
}

// The stubbed tools are named once, with the next step, in the summary
// and in JUnit; nothing when no call was stubbed.
func TestStubbedToolsAreNamedOnce(t *testing.T) {
	s := &runner.StubbedReport{Tools: []string{"edit/editFiles", "web/fetch"}, Examples: []string{"a", "b"}, Message: "answered \"This tool is not available in this test.\"", Next: runner.StubbedNext}
	var b strings.Builder
	printStubbed(&b, s)
	want := "stubbed: edit/editFiles, web/fetch answered \"This tool is not available in this test.\" in 2 examples\nnext: " + runner.StubbedNext + "\n"
	if b.String() != want {
		t.Fatalf("printed %q\nwant    %q", b.String(), want)
	}
	b.Reset()
	printStubbed(&b, nil)
	if b.Len() != 0 {
		t.Fatalf("printed %q with nothing stubbed", b.String())
	}
	suite := junitSuiteOf(&runner.Report{Stubbed: s})
	var got []string
	for _, p := range suite.Props {
		if strings.HasPrefix(p.Name, "toolStubbed") {
			got = append(got, p.Name+"="+p.Value)
		}
	}
	if strings.Join(got, "|") != "toolStubbed=edit/editFiles|toolStubbed=web/fetch|toolStubbedNext="+runner.StubbedNext {
		t.Fatalf("JUnit properties %v", got)
	}
}

// Issue 31 item 11: an agent declaring 32 tools printed a tools: line of 32
// entries and 32 JUnit toolSetting properties. Both say it in a few
// figures: how many are declared, which are disabled, and what answers the
// offered ones; the JSON report keeps every name and state.
func TestThirtyTwoDeclaredToolsAreOneSummaryLineNotThirtyTwoEntries(t *testing.T) {
	h := home(t)
	dir := t.TempDir()
	var names []string
	for i := 1; i <= 32; i++ {
		names = append(names, fmt.Sprintf("tool%02d", i))
	}
	agent := "---\nmodel: fake\ntools: [" + strings.Join(names, ", ") + "]\n---\nReply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: one\n  input: hi\n  tools:\n    tool01:\n      recorded:\n        calls: [{arguments: {}, result: fine}]\n  assert:\n    - contains: ok\n```\n"
	file := filepath.Join(dir, "many.agent.md")
	if err := os.WriteFile(file, []byte(agent), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kmx.yaml"), []byte("tools:\n  tool31: Disabled\n  tool32: Disabled\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(t.TempDir(), "out.xml")
	r := kmx(t, h, "test", file, "--junit", junit)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	want := `tools: 32 declared, 2 disabled in kmx.yaml (tool31, tool32) · 32 offered: 1 recorded, 29 unavailable (answered "not available in this test"), 2 disabled`
	if !strings.Contains(r.stdout, want+"\n") {
		t.Errorf("output does not end its tools line as %q:\n%s", want, r.stdout)
	}
	if strings.Contains(r.stdout, "tool05") {
		t.Errorf("the output names every tool:\n%s", r.stdout)
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(x), `name="toolSetting"`); n != 0 {
		t.Errorf("JUnit has %d toolSetting properties, want a summary:\n%s", n, x)
	}
	for _, w := range []string{`name="tools" value="32 declared, 2 disabled in kmx.yaml (tool31, tool32) · 32 offered: 1 recorded, 29 unavailable (answered &#34;not available in this test&#34;), 2 disabled"`, `name="toolDisabled" value="tool31"`, `name="toolDisabled" value="tool32"`} {
		if !strings.Contains(string(x), w) {
			t.Errorf("JUnit lacks %s:\n%s", w, x)
		}
	}
	j := kmx(t, h, "test", file, "--json")
	var rep struct {
		ToolSettings []struct{ Name, State string }
		ToolSummary  struct {
			Declared, Offered int
			Sources           map[string]int
		}
	}
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.ToolSettings) != 32 || rep.ToolSummary.Declared != 32 || rep.ToolSummary.Offered != 32 || rep.ToolSummary.Sources["recorded"] != 1 {
		t.Errorf("JSON toolSettings %d, toolSummary %+v", len(rep.ToolSettings), rep.ToolSummary)
	}
}
