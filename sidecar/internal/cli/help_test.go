package cli

import (
	"strings"
	"testing"
)

// TestHelpListsEveryFlag: every command's -h and --help prints its usage
// with every flag it takes on stdout and exits 0, with nothing on stderr.
func TestHelpListsEveryFlag(t *testing.T) {
	route := []string{"--model NAME", "--endpoint URL", "--key-env NAME", "--judge-endpoint URL", "--judge-key-env NAME"}
	cases := []struct {
		args  []string
		flags []string
	}{
		{[]string{"check"}, []string{"--json"}},
		{[]string{"test"}, append([]string{"--example ID", "--json", "--junit PATH", "--trials N", "--from RUN"}, route...)},
		{[]string{"run"}, append([]string{"--example ID", "--input TEXT", "--input-file PATH", "--json"}, route...)},
		{[]string{"test", "explain"}, []string{"--file FILE", "--show-content", "--clear", "--json"}},
		{[]string{"journal"}, []string{"kmx journal list", "kmx journal clear", "kmx journal inspect", "kmx journal diff"}},
		{[]string{"journal", "list"}, []string{"--json", "--file FILE"}},
		{[]string{"journal", "clear"}, []string{"--json"}},
		{[]string{"journal", "inspect"}, []string{"--json", "--show-reasoning"}},
		{[]string{"journal", "diff"}, []string{"--json"}},
		{[]string{"chat"}, []string{"--input", "--history", "--discard-unfinished", "--clear", "--conversation", "--json"}},
		{[]string{"lsp"}, []string{"--stdio", "--log-level"}},
		{[]string{"mcp"}, []string{"--endpoint", "--key-env", "--judge-endpoint", "--judge-key-env", "--log-level"}},
		{[]string{"version"}, []string{"kmx version"}},
		{[]string{"chat"}, append([]string{"--input", "--input-file", "--history", "--discard-unfinished", "--clear", "--conversation", "--json"}, route[:3]...)},
	}
	// Every command in the table is covered.
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.args[0]] = true
	}
	for name := range commands() {
		if !covered[name] {
			t.Errorf("command %q has no help case", name)
		}
	}
	h := home(t)
	for _, tc := range cases {
		for _, help := range []string{"-h", "--help"} {
			args := append(append([]string{}, tc.args...), help)
			r := kmx(t, h, args...)
			if r.code != ExitOK || r.stderr != "" || !strings.HasPrefix(r.stdout, "Usage: kmx "+tc.args[0]) {
				t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
				continue
			}
			for _, f := range tc.flags {
				if !strings.Contains(r.stdout, f) {
					t.Errorf("%v: help does not name %q:\n%s", args, f, r.stdout)
				}
			}
		}
	}
	// kmx help COMMAND is the same as kmx COMMAND --help.
	if a, b := kmx(t, h, "help", "test"), kmx(t, h, "test", "--help"); a.code != ExitOK || a.stdout != b.stdout {
		t.Errorf("kmx help test: exit %d\n%s", a.code, a.stdout)
	}
}
