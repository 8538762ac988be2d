package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/mcpserver"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestRefusalsNameArgumentsNotFlags: what MCP refuses is said in MCP's
// terms (tool arguments, the server's startup settings), never as a
// command line flag, in the text and in the refused report alike, while
// the same refusal on the command line keeps its flags (issue 31 item 11).
func TestRefusalsNameArgumentsNotFlags(t *testing.T) {
	dir := t.TempDir()
	noModel := filepath.Join(dir, "nomodel.agent.md")
	greeter := filepath.Join(dir, "greeter.agent.md")
	other := filepath.Join(dir, "other.agent.md")
	for path, body := range map[string]string{
		noModel: "---\nname: nomodel\n---\nReply with exactly `hello`.\n\n## Examples\n\n```yaml\n- id: greet\n  input: Hi\n  assert:\n    - contains: hello\n```\n",
		greeter: "---\nname: greeter\nmodel: fake\n---\nReply with exactly `hello`.\n\n## Examples\n\n```yaml\n- id: greet\n  input: Hi\n  assert:\n    - contains: hello\n```\n",
		other:   "---\nname: other\nmodel: fake\n---\nReply with exactly `hello`.\n\n## Examples\n\n```yaml\n- id: greet\n  input: Hi\n  assert:\n    - contains: hello\n```\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := envWith(map[string]string{"KMX_HOME": testutil.PrivateDir(t)})
	plain := connect(t, mcpserver.Config{Version: "test", Getenv: env})
	// An endpoint that is never reached: every case is refused before
	// anything is sent.
	withEndpoint := connect(t, mcpserver.Config{Version: "test", Getenv: env, Endpoint: "http://127.0.0.1:9/v1"})
	var greeterRun runner.Report
	decode(t, call(t, plain, "Test", map[string]any{"file": greeter}), &greeterRun)

	tests := []struct {
		name string
		cs   bool // withEndpoint
		tool string
		args map[string]any
		want []string
	}{
		{"no endpoint", false, "Test", map[string]any{"file": greeter, "model": "gpt-4o"},
			[]string{"next: pass the server's startup endpoint URL (for a local Ollama: the server's startup endpoint http://127.0.0.1:11434/v1), or choose model \"fake\""}},
		{"empty input", false, "Run", map[string]any{"file": greeter, "input": ""},
			[]string{`next: pass the text to send with input "TEXT"`}},
		{"no model on an endpoint", true, "Test", map[string]any{"file": noModel},
			[]string{`next: pass model "NAME" with the name the endpoint serves the model under (for a local Ollama, for example model "llama3.2")`}},
		{"a model in VS Code's form on an endpoint", true, "Test", map[string]any{"file": greeter, "model": "Claude Sonnet 4.6 (copilot)"},
			[]string{`next: pass model "NAME" with the name`, "or run the agent from the kmx extension"}},
		{"a re-grade of another file's run", false, "Test", map[string]any{"file": other, "fromRun": greeterRun.RunID},
			[]string{"next: pass a run of this file as the fromRun argument (each Test result names its run), or test afresh without it"}},
		{"a re-grade of a run that is not retained", false, "Test", map[string]any{"file": other, "fromRun": "20990101T000000.000000000Z-00000000"},
			[]string{"next: pass the run ID a Test result named"}},
		{"a baseline git would read as an option", false, "Test", map[string]any{"file": greeter, "baseline": "-x"},
			[]string{`baseline "-x" starts with '-'`}},
		{"a baseline outside git", false, "Test", map[string]any{"file": greeter, "baseline": "HEAD~1"},
			[]string{`baseline "HEAD~1": `, `or use baseline "none" to compare with empty instructions`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := plain
			if tc.cs {
				cs = withEndpoint
			}
			res := call(t, cs, tc.tool, tc.args)
			got := text(res)
			if !res.IsError {
				t.Fatalf("not refused:\n%s", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("text lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, "--") {
				t.Errorf("text names a flag:\n%s", got)
			}
			var rep runner.Report
			if res.StructuredContent != nil {
				decode(t, res, &rep)
			}
			if r := rep.Refusal; r != nil && (strings.Contains(r.Message, "--") || strings.Contains(r.Next, "--") || !strings.Contains(got, "next: "+r.Next)) {
				t.Errorf("refused report %+v, text:\n%s", *r, got)
			}
		})
	}
}
