package cli

import (
	"strings"
	"testing"
)

// TestConcurrencyFlag: --concurrency takes 1 to 32 on run, test and mcp;
// anything else is a usage refusal naming the range, before anything runs.
func TestConcurrencyFlag(t *testing.T) {
	h := home(t)
	notes := demoFile("release-notes.agent.md")
	cases := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"test", notes, "--concurrency", "1"}, ExitOK, "verdict pass", ""},
		{[]string{"test", notes, "--concurrency", "32"}, ExitOK, "verdict pass", ""},
		{[]string{"run", notes, "--concurrency", "8"}, ExitOK, "Release notes: Hotfix 1.4.2", ""},
		{[]string{"test", notes, "--concurrency", "0"}, ExitRefusal, "", "from 1 to 32"},
		{[]string{"test", notes, "--concurrency", "33"}, ExitRefusal, "", "from 1 to 32"},
		{[]string{"run", notes, "--concurrency", "many"}, ExitRefusal, "", "from 1 to 32"},
		{[]string{"mcp", "--concurrency", "-1"}, ExitRefusal, "", "from 1 to 32"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args[2:], " ")+" "+tc.args[0], func(t *testing.T) {
			r := kmx(t, h, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
		})
	}
}
