package cli

import (
	"encoding/json"
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
	for _, want := range []string{"tools: 1 call: github_list_merged_prs (recorded)", "tools: 1 call: github_list_merged_prs (unavailable)", "tools: github_list_merged_prs Enabled"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output does not say %q:\n%s", want, r.stdout)
		}
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`name="toolSetting" value="github_list_merged_prs=Enabled"`, `name="toolSource" value="github_list_merged_prs=recorded"`, `name="toolCalls" value="1"`} {
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
