package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestRefusalsNoToolReachesAreWordedToo: the engine's refusals that no
// tool call can reach (MCP's Test has no input, its Run no trials, and the
// Test tool refuses bad trials itself) are worded for MCP like every other
// (problem.Words), while the command line keeps its flags.
func TestRefusalsNoToolReachesAreWordedToo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "greeter.agent.md")
	src := []byte("---\nname: greeter\nmodel: fake\n---\nReply with exactly `hello`.\n\n## Examples\n\n```yaml\n- id: greet\n  input: Hi\n  assert:\n    - contains: hello\n```\n")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	home := testutil.PrivateDir(t)
	cfg := Config{Version: "test", Getenv: func(k string) string {
		if k == "KMX_HOME" {
			return home
		}
		return ""
	}}
	input := "Hi"
	flag := regexp.MustCompile(`--[a-z]|\bkmx (run|test|check|journal|chat)\b`)
	tests := []struct {
		name    string
		run     bool
		trials  int
		fromRun string
		input   *string
		want    string // MCP's words
	}{
		{"ad-hoc input for Test", false, 0, "", &input, `use Run with input "TEXT" to try an input; Test runs the file's examples`},
		{"trials for Run", true, 2, "", nil, "use Test with trials N"},
		{"too many trials", false, 21, "", nil, "pass trials N with N from 1 to 20"},
		{"trials with a re-grade", false, 2, "20990101T000000.000000000Z-00000000", nil, "drop the trials argument to re-grade the run's answers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := cfg.options("")
			opts.Trials, opts.FromRun = tc.trials, tc.fromRun
			req := invocation.Request{Path: path, Source: src, Input: tc.input}
			var rep *runner.Report
			var err error
			if tc.run {
				rep, err = runner.Run(context.Background(), opts, req)
			} else {
				rep, err = runner.Test(context.Background(), opts, req)
			}
			r, ok := invocation.AsRefusal(err)
			if !ok {
				t.Fatalf("not refused: %v", err)
			}
			said := r.MessageIn(words) + "\nnext: " + r.NextStepIn(words)
			if rep != nil && rep.Refusal != nil {
				said += "\n" + rep.Refusal.Message + "\n" + rep.Refusal.Next
			}
			if !strings.Contains(said, tc.want) {
				t.Errorf("MCP's words lack %q:\n%s", tc.want, said)
			}
			if m := flag.FindString(said); m != "" {
				t.Errorf("MCP's words name %q:\n%s", m, said)
			}
			if !strings.Contains(r.Msg+r.Next, "--") {
				t.Errorf("the command line's words lost their flags: %s; %s", r.Msg, r.Next)
			}
		})
	}
}
