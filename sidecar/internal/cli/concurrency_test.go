package cli

import "testing"

// TestConcurrencyFlag: --concurrency takes 1 to 32 on run, test and mcp;
// anything else is a usage refusal naming the range, before anything runs.
func TestConcurrencyFlag(t *testing.T) {
	h := home(t)
	notes := demoFile("release-notes.agent.md")
	cases := []cliCase{
		{"--concurrency 1 test", []string{"test", notes, "--concurrency", "1"}, ExitOK, "verdict pass", ""},
		{"--concurrency 32 test", []string{"test", notes, "--concurrency", "32"}, ExitOK, "verdict pass", ""},
		{"--concurrency 8 run", []string{"run", notes, "--concurrency", "8"}, ExitOK, "Release notes: Hotfix 1.4.2", ""},
		{"--concurrency 0 test", []string{"test", notes, "--concurrency", "0"}, ExitRefusal, "", "from 1 to 32"},
		{"--concurrency 33 test", []string{"test", notes, "--concurrency", "33"}, ExitRefusal, "", "from 1 to 32"},
		{"--concurrency many run", []string{"run", notes, "--concurrency", "many"}, ExitRefusal, "", "from 1 to 32"},
		{"--concurrency -1 mcp", []string{"mcp", "--concurrency", "-1"}, ExitRefusal, "", "from 1 to 32"},
	}
	checkCLI(t, h, nil, cases)
}
