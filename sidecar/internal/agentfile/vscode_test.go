package agentfile

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// TestVSCodeAgentFiles holds the files in testdata/vscode (written in VS
// Code's custom agent format: display names, model lists, every documented
// header key, every tool reference form) to their golden summaries, and
// checks that none of them has an error.
func TestVSCodeAgentFiles(t *testing.T) {
	for name, src := range readFiles(t, "testdata/vscode") {
		t.Run(name, func(t *testing.T) {
			r := Parse(".github/agents/"+name, src)
			for _, d := range r.Diagnostics {
				if d.Severity != SeverityInformation {
					t.Errorf("a VS Code agent file draws %s %s: %s", d.Severity, d.Code, d.Message)
				}
			}
			matchGolden(t, "testdata/vscode/"+strings.TrimSuffix(name, ".agent.md")+".golden", summarize(r))
		})
	}
}

func summarize(r Result) string {
	a := r.Agent
	var b strings.Builder
	fmt.Fprintf(&b, "state: %s\nid: %s\nname: %s\ndisplay: %s\n", r.State, a.ID, a.Name, a.DisplayName())
	if a.Model != nil {
		fmt.Fprintf(&b, "model: %s\n", *a.Model)
	}
	for _, m := range a.Models {
		fmt.Fprintf(&b, "models: %s\n", m)
	}
	for _, tl := range a.Tools {
		fmt.Fprintf(&b, "tool: %s\n", tl.Name)
	}
	fmt.Fprintf(&b, "examples: %d\n", len(a.Examples))
	b.WriteString(FormatDiagnostics(r.Diagnostics))
	return b.String()
}

// The documented header keys with a value of the shape VS Code documents,
// and the tool reference forms; the property tests below combine them.
var (
	documentedKeys = map[string][]string{
		"name":                     {"C# Expert", "'Thinking Beast Mode'", `"Planner: v2 (beta)"`, "release-notes", "Ünïcode 🚀 name"},
		"description":              {"Reviews code.", "'A quoted: description'", "", "|\n  Two\n  lines"},
		"argument-hint":            {"Describe the change", "'[file] [question]'"},
		"model":                    {"fake", "GPT-4.1", "gpt-4.1", "Claude Sonnet 4.5 (copilot)", "[Claude Sonnet 4.6 (copilot), GPT-5 (copilot)]", "\n  - claude-sonnet-4\n  - gpt-4.1", "[]"},
		"tools":                    nil, // built from toolForms
		"agents":                   {"['Implementer', 'Reviewer']", "'*'", "[]"},
		"target":                   {"vscode", "github-copilot"},
		"user-invocable":           {"true", "false"},
		"user-invokable":           {"true", "false"},
		"disable-model-invocation": {"true", "false"},
		"infer":                    {"true", "false"},
		"metadata":                 {"{owner: team}"},
		"mcp-servers":              {"{docs: {type: local, command: npx, tools: ['*']}}", "\n  - name: docs\n    url: https://example.invalid/mcp"},
		"handoffs":                 {"\n  - label: Implement\n    agent: Implementer\n    prompt: Go.\n    send: false"},
		"hooks":                    {"{PostToolUse: [{type: command, command: ./fmt.sh}]}"},
	}
	toolForms = []string{
		"codebase", "search", "edit", "edit/editFiles", "web/fetch", "execute/runInTerminal",
		"search/codebase", "read/problems", "github/*", "microsoft.docs.mcp", "'*'",
		"vscode/askQuestions", "github.vscode-pull-request-github/activePullRequest",
		"'mcp_server/tool-name'", "todos", `"my server/my tool"`, "Ünïcode/tööl",
	}
)

func randomHeader(rng *rand.Rand) string {
	keys := make([]string, 0, len(documentedKeys))
	for k := range documentedKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var b strings.Builder
	b.WriteString("---\n")
	for _, k := range keys[:rng.IntN(len(keys)+1)] {
		if k == "tools" {
			n := rng.IntN(len(toolForms) + 1)
			perm := rng.Perm(len(toolForms))[:n]
			refs := make([]string, n)
			for i, p := range perm {
				refs[i] = toolForms[p]
			}
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&b, "tools: [%s]\n", strings.Join(refs, ", "))
			} else {
				b.WriteString("tools:\n")
				for _, r := range refs {
					fmt.Fprintf(&b, "  - %s\n", r)
				}
			}
			continue
		}
		vals := documentedKeys[k]
		fmt.Fprintf(&b, "%s: %s\n", k, vals[rng.IntN(len(vals))])
	}
	b.WriteString("---\n")
	return b.String()
}

// TestNoDocumentedHeaderProducesAnError is the property of issue 11: any
// combination of documented header keys and tool reference forms opens
// without an error or a warning, with or without examples.
func TestNoDocumentedHeaderProducesAnError(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 19))
	bodies := []string{
		"You review code.\n",
		"Reply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert: [contains: ok]\n```\n",
	}
	for i := 0; i < 2000; i++ {
		src := randomHeader(rng) + bodies[i%len(bodies)]
		r := Parse("agents/reviewer.agent.md", []byte(src))
		for _, d := range r.Diagnostics {
			if d.Severity != SeverityInformation || d.Code == CodeUnfinished {
				t.Fatalf("documented header draws %s %s %q:\n%s", d.Severity, d.Code, d.Message, src)
			}
		}
		if r.State != Valid {
			t.Fatalf("state %v:\n%s", r.State, src)
		}
	}
}

// TestPrefixesOfVSCodeFilesAreNeverInvalid extends property 1 to the VS
// Code-format files: typing one from the top never shows an error.
func TestPrefixesOfVSCodeFilesAreNeverInvalid(t *testing.T) {
	for name, src := range readFiles(t, "testdata/vscode") {
		for n := 0; n <= len(src); n++ {
			if r := Parse(name, src[:n]); r.State == Invalid {
				t.Fatalf("%s: prefix of %d bytes (ending %q) is invalid:\n%s", name, n, tail(src[:n]), FormatDiagnostics(r.Diagnostics))
			}
		}
	}
}

func TestModelStringOrList(t *testing.T) {
	tests := []struct {
		header string
		want   []string
	}{
		{"model: GPT-4.1", []string{"GPT-4.1"}},
		{"model: 'Claude Sonnet 4.6 (copilot)'", []string{"Claude Sonnet 4.6 (copilot)"}},
		{"model: [a, 'B (vendor)']", []string{"a", "B (vendor)"}},
		{"model:\n  - first\n  - second", []string{"first", "second"}},
		{"model: []", nil},
		{"model:", nil},
	}
	for _, tt := range tests {
		r := Parse("m.agent.md", []byte("---\n"+tt.header+"\n---\nHi.\n"))
		a := r.Agent
		if r.State != Valid || strings.Join(a.Models, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%q: state %v, Models %q, want %q\n%s", tt.header, r.State, a.Models, tt.want, FormatDiagnostics(r.Diagnostics))
			continue
		}
		if len(tt.want) == 0 && a.Model != nil || len(tt.want) > 0 && (a.Model == nil || *a.Model != tt.want[0]) {
			t.Errorf("%q: Model = %v, want the first of %q", tt.header, a.Model, tt.want)
		}
	}
}

func TestIDComesFromTheFileName(t *testing.T) {
	tests := []struct {
		file, id string
		ok       bool
	}{
		{"a/b/release-notes.agent.md", "release-notes", true},
		{`C:\x\Planner.v2.agent.md`, "Planner.v2", true},
		{".github/agents/reviewer.md", "reviewer", true},
		{"old.chatmode.md", "old", true},
		{"C# Expert.agent.md", "C# Expert", false},
		{"-dash.agent.md", "-dash", false},
		{".agent.md", "", false},
	}
	for _, tt := range tests {
		id, ok := IDFromFileName(tt.file)
		if id != tt.id || ok != tt.ok {
			t.Errorf("IDFromFileName(%q) = %q, %v; want %q, %v", tt.file, id, ok, tt.id, tt.ok)
		}
		r := Parse(tt.file, []byte("---\nname: Shown Name\n---\nHi.\n"))
		if r.Agent.ID != tt.id || r.Agent.DisplayName() != "Shown Name" || hasCode(r, CodeBadFileName) == tt.ok {
			t.Errorf("Parse(%q): ID %q, display %q, KMX1007 %v", tt.file, r.Agent.ID, r.Agent.DisplayName(), hasCode(r, CodeBadFileName))
		}
	}
	r := Parse("C# Expert.agent.md", []byte("Hi.\n"))
	if d := r.Diagnostics[0]; d.Code != CodeBadFileName || !strings.Contains(d.Message, "`c-expert.agent.md`") {
		t.Errorf("the refusal does not say what to rename the file to: %+v", d)
	}
}

func TestPreviewNoteIsSaidOncePerKey(t *testing.T) {
	src := "---\nhandoffs: []\nmcp-servers: {}\nhooks: {}\nagents: []\n---\nHi.\n"
	r := Parse("n.agent.md", []byte(src))
	n := 0
	for _, d := range r.Diagnostics {
		if d.Code == CodePreviewNote {
			n++
			if d.Severity != SeverityInformation {
				t.Errorf("%s is %v, want information", d.Code, d.Severity)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d KMX1008 notes, want 3 (handoffs, mcp-servers, hooks):\n%s", n, FormatDiagnostics(r.Diagnostics))
	}
}
