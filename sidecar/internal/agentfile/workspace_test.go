package agentfile

import (
	"strings"
	"testing"
)

const workspaceFile = "---\nmodel: fake\n---\nFix the bug.\n\n## Examples\n\n```yaml\n" +
	"- workspace: fixtures/calc\n" +
	"- id: fix\n  input: fix Add\n  assert:\n" +
	"    - fileContains: {path: calc/add.go, text: return a + b}\n" +
	"    - fileNotContains: {path: calc/add.go, text: return a - b}\n" +
	"    - fileMatches: {path: calc/add.go, regex: 'a \\+ b'}\n" +
	"    - fileUnchanged: README.md\n" +
	"    - filesChanged: [calc/add.go]\n" +
	"- id: own\n  input: look\n  workspace: fixtures/other\n  assert:\n    - filesChanged: []\n" +
	"```\n"

func TestWorkspaceAndFileAssertionsParse(t *testing.T) {
	r := Parse("calc.agent.md", []byte(workspaceFile))
	if r.State != Valid {
		t.Fatalf("state %v:\n%s", r.State, FormatDiagnostics(r.Diagnostics))
	}
	a := r.Agent
	if a.Workspace != "fixtures/calc" || len(a.Examples) != 2 {
		t.Fatalf("default %q, %d examples", a.Workspace, len(a.Examples))
	}
	fix, own := a.Examples[0], a.Examples[1]
	if a.WorkspaceOf(fix) != "fixtures/calc" || a.WorkspaceOf(own) != "fixtures/other" || fix.Workspace != "" {
		t.Fatalf("workspaces %q %q", a.WorkspaceOf(fix), a.WorkspaceOf(own))
	}
	got := []string{}
	for _, as := range fix.Assertions {
		got = append(got, string(as.Type)+"|"+as.Operands().Path+"|"+as.Value+"|"+strings.Join(as.Operands().Paths, ","))
	}
	want := []string{
		"fileContains|calc/add.go|return a + b|",
		"fileNotContains|calc/add.go|return a - b|",
		"fileMatches|calc/add.go|a \\+ b|",
		"fileUnchanged|README.md||",
		"filesChanged|||calc/add.go",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("assertions:\n%s", strings.Join(got, "\n"))
	}
	if p := own.Assertions[0].Operands().Paths; p == nil || len(p) != 0 {
		t.Fatalf("filesChanged: [] is %#v, want an empty list", p)
	}
	// The per-entry (memo) parse gives the same agent.
	var ps Parser
	for range 2 {
		m := ps.Parse("calc.agent.md", []byte(workspaceFile))
		if m.Agent.Workspace != a.Workspace || len(m.Agent.Examples) != 2 || m.State != Valid {
			t.Fatalf("memo parse: %q, %d examples, %v", m.Agent.Workspace, len(m.Agent.Examples), m.State)
		}
	}
}

func TestWorkspaceRefusals(t *testing.T) {
	head := "---\nmodel: fake\n---\nx\n\n## Examples\n\n```yaml\n"
	for name, tc := range map[string]struct{ body, code, msg string }{
		"absolute":         {"- id: a\n  input: b\n  workspace: /tmp/x\n", CodeBadWorkspace, "absolute"},
		"dot dot":          {"- id: a\n  input: b\n  workspace: a/../..\n", CodeBadWorkspace, `".."`},
		"not text":         {"- id: a\n  input: b\n  workspace: [a]\n", CodeBadWorkspace, "one folder path"},
		"default second":   {"- id: a\n  input: b\n- workspace: w\n", CodeBadWorkspace, "goes first"},
		"no workspace":     {"- id: a\n  input: b\n  assert:\n    - fileUnchanged: x\n", CodeFileNoWorkspace, "needs a workspace"},
		"path escapes":     {"- id: a\n  input: b\n  workspace: w\n  assert:\n    - fileUnchanged: ../x\n", CodeMalformedAssertion, `".."`},
		"absolute path":    {"- id: a\n  input: b\n  workspace: w\n  assert:\n    - fileContains: {path: /etc/passwd, text: root}\n", CodeMalformedAssertion, "absolute"},
		"missing text":     {"- id: a\n  input: b\n  workspace: w\n  assert:\n    - fileContains: {path: a.go}\n", CodeMalformedAssertion, "{path: FILE, text: ...}"},
		"extra key":        {"- id: a\n  input: b\n  workspace: w\n  assert:\n    - fileMatches: {path: a.go, regex: x, text: y}\n", CodeMalformedAssertion, "unknown `fileMatches` key"},
		"bad regex":        {"- id: a\n  input: b\n  workspace: w\n  assert:\n    - fileMatches: {path: a.go, regex: '(?<=x)'}\n", CodeBadRegex, "RE2"},
		"changed twice":    {"- id: a\n  input: b\n  workspace: w\n  assert:\n    - filesChanged: [a.go, a.go]\n", CodeMalformedAssertion, "twice"},
		"changed not list": {"- id: a\n  input: b\n  workspace: w\n  assert:\n    - filesChanged: a.go\n", CodeMalformedAssertion, "a list of file paths"},
	} {
		r := Parse("x.agent.md", []byte(head+tc.body+"```\n"))
		found := false
		for _, d := range r.Diagnostics {
			if d.Code == tc.code && strings.Contains(d.Message, tc.msg) {
				found = true
			}
		}
		if !found || r.State != Invalid {
			t.Errorf("%s: want %s with %q:\n%s", name, tc.code, tc.msg, FormatDiagnostics(r.Diagnostics))
		}
	}
}

// An invalid `workspace:` (the example's or the file's default) is one
// KMX2020 where it is written; the file assertions it would serve are not
// also told they need a workspace (KMX3007), which would send the author
// to add the line they already have.
func TestInvalidWorkspaceIsNotAlsoMissing(t *testing.T) {
	head := "---\nmodel: fake\n---\nx\n\n## Examples\n\n```yaml\n"
	for name, body := range map[string]string{
		"default absolute": "- workspace: /tmp\n- id: a\n  input: b\n  assert:\n    - fileUnchanged: x\n    - filesChanged: []\n",
		"default dot dot":  "- workspace: ../up\n- id: a\n  input: b\n  assert:\n    - fileUnchanged: x\n",
		"own unclean":      "- id: a\n  input: b\n  workspace: ./w\n  assert:\n    - fileUnchanged: x\n",
		"own not text":     "- id: a\n  input: b\n  workspace: [w]\n  assert:\n    - fileUnchanged: x\n",
	} {
		r := Parse("x.agent.md", []byte(head+body+"```\n"))
		var codes []string
		for _, d := range r.Diagnostics {
			codes = append(codes, d.Code)
		}
		if strings.Join(codes, ",") != CodeBadWorkspace || r.State != Invalid {
			t.Errorf("%s: want exactly one %s, got:\n%s", name, CodeBadWorkspace, FormatDiagnostics(r.Diagnostics))
		}
	}
}

func TestWorkspaceDefaultInTheExamplesFile(t *testing.T) {
	agent := []byte("---\nmodel: fake\n---\nFix the bug.\n")
	ex := []byte("- workspace: fixtures/calc\n- id: fix\n  input: fix Add\n  assert:\n    - filesChanged: [calc/add.go]\n")
	r := ParsePair("calc.agent.md", agent, "calc.agent.examples.yaml", ex)
	if r.State != Valid || r.Agent.Workspace != "fixtures/calc" || len(r.Agent.Examples) != 1 {
		t.Fatalf("%v %q %d:\n%s", r.State, r.Agent.Workspace, len(r.Agent.Examples), FormatDiagnostics(r.Diagnostics))
	}
}

// The parser's path checks refuse what package workspace refuses on disk
// (the same cases as its TestCheckPathRefuses... and TestCheckFilePath).
func TestWorkspacePathChecks(t *testing.T) {
	for rel, want := range map[string]string{"": "is empty", "/etc": "absolute", `C:\fixture`: "absolute", "c:fixture": "absolute",
		`\\srv\share`: "absolute", "../fixture": `".."`, "a/../../b": `".."`, `a\b`: `\ as a separator`, "./fixture": `write it as "fixture"`,
		"fixture/": `write it as "fixture"`, "a//b": `write it as "a/b"`} {
		if err := checkWorkspaceDir(rel); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkWorkspaceDir(%q) = %v, want %q", rel, err, want)
		}
	}
	for p, want := range map[string]string{"": "empty", ".": "empty", "/a": "absolute", "C:/a": "absolute", "../a": `".."`, `a\b`: `\`, "a//b": "clean", "a/": "clean"} {
		if err := checkWorkspaceFile(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkWorkspaceFile(%q) = %v, want %q", p, err, want)
		}
	}
	for _, ok := range []string{"fixture", "fixtures/app", "."} {
		if err := checkWorkspaceDir(ok); err != nil {
			t.Errorf("checkWorkspaceDir(%q) = %v", ok, err)
		}
	}
	if err := checkWorkspaceFile("src/main.go"); err != nil {
		t.Fatal(err)
	}
}
