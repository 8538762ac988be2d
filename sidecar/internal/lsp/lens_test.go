package lsp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

func TestCodeLenses(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		kmxYAML string // "" = no kmx.yaml
		// want lists "line:title:command" for every lens, in order.
		want []string
	}{
		{
			name: "run example per example and test file on the heading",
			text: greeter,
			want: []string{"0:💬 Open chat:kmx.openChat", "7:▶ Test file:kmx.testFile", "10:▶ Run example:kmx.runExample", "14:▶ Run example:kmx.runExample", "19:▶ Run example:kmx.runExample"},
		},
		{
			name: "tool states beside test file, missing = Enabled, no switch",
			text: withTools, kmxYAML: "tools:\n  ping: Disabled\nother: kept\n",
			want: []string{"0:💬 Open chat:kmx.openChat", "7:▶ Test file:kmx.testFile", "7:tools: github_list_merged_prs: Enabled, ping: Disabled:", "10:▶ Run example:kmx.runExample"},
		},
		{
			name: "invalid kmx.yaml says so on the lens",
			text: withTools, kmxYAML: "tools:\n  ping: Ask\n",
			want: []string{"0:💬 Open chat:kmx.openChat", "7:▶ Test file:kmx.testFile", "7:⚠ kmx.yaml:2:9: tool \"ping\" has state Ask, which is not supported yet: use Enabled or Disabled; Run and Test are refused until kmx.yaml is fixed:", "10:▶ Run example:kmx.runExample"},
		},
		{
			name: "a file with errors still has lenses",
			text: strings.Replace(greeter, "- id: second", "- id: first", 1),
			want: []string{"0:💬 Open chat:kmx.openChat", "7:▶ Test file:kmx.testFile", "10:▶ Run example:kmx.runExample", "14:▶ Run example:kmx.runExample", "19:▶ Run example:kmx.runExample"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeAgent(t, "x.agent.md", tt.text)
			if tt.kmxYAML != "" {
				if err := os.WriteFile(filepath.Join(filepath.Dir(path), "kmx.yaml"), []byte(tt.kmxYAML), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c := startServer(t, lsp.Options{})
			c.initialize(nil)
			uri := fileURI(path)
			c.open(uri, 1, tt.text)
			var got []string
			for _, l := range c.lenses(uri) {
				got = append(got, strings.Join([]string{strconv.Itoa(l.Range.Start.Line), l.Command.Title, l.Command.Command}, ":"))
				var arg struct{ URI string }
				if l.Command.Command != "" && (len(l.Command.Arguments) != 1 || json.Unmarshal(l.Command.Arguments[0], &arg) != nil || arg.URI != uri) {
					t.Errorf("lens %q arguments %v, want one object naming the document", l.Command.Title, l.Command.Arguments)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("lenses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestExamplesForTheTestExplorer(t *testing.T) {
	path := writeAgent(t, "x.agent.md", withTools)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "kmx.yaml"), []byte("tools:\n  ping: Disabled\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	// Not open: read from disk.
	var ex lsp.ExamplesResult
	c.mustCall(lsp.MethodExamples, lsp.DocumentParams{URI: fileURI(path)}, &ex)
	if ex.State != "valid" || ex.AgentID != "x" || ex.AgentName != "tooled" || ex.DocumentVersion != 0 || ex.ProtocolVersion != lsp.ProtocolVersion {
		t.Fatalf("result = %+v", ex)
	}
	if len(ex.Examples) != 1 || ex.Examples[0].ID != "one" || ex.Examples[0].Range.Start.Line != 10 {
		t.Fatalf("examples = %+v", ex.Examples)
	}
	if a := ex.Examples[0].Assertions; len(a) != 1 || a[0].Summary != `contains "ok"` {
		t.Fatalf("assertions = %+v", a)
	}
	if ts := ex.Tools.States; len(ts) != 2 || ts[0].State != "Enabled" || ts[1].Name != "ping" || ts[1].State != "Disabled" {
		t.Fatalf("tool states = %+v", ex.Tools)
	}
	// Open with an unfinished buffer: the buffer wins.
	c.open(fileURI(path), 4, unfinished)
	c.mustCall(lsp.MethodExamples, lsp.DocumentParams{URI: fileURI(path)}, &ex)
	if ex.State != "unfinished" || ex.DocumentVersion != 4 {
		t.Fatalf("open buffer: state %q version %d, want unfinished 4", ex.State, ex.DocumentVersion)
	}
}
