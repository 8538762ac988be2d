package cli

import (
	"os"
	"path/filepath"
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
		{[]string{"test", "explain"}, []string{"kmx test explain FILE", "--file FILE", "--show-content", "--clear", "--json"}},
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

// TestWhatANewUserSawInHelp (issue 31 item 13): kmx -h left Chat out of the
// MCP tools and diff out of journal; test -h never mentioned test explain;
// kmx --version was an unknown command; mcp -h listed a tests-only flag;
// errors spelt flags -frob; chat -h said "(default default)"; and every
// command's own messages came out as "kmx: kmx check: …".
func TestWhatANewUserSawInHelp(t *testing.T) {
	h := home(t)
	top := kmx(t, h, "-h").stdout
	for _, want := range []string{"MCP tools Run, Test, Explain and Chat", "journal list|clear|inspect|diff", "test explain FILE", "kmx --version"} {
		if !strings.Contains(top, want) {
			t.Errorf("kmx -h does not say %q:\n%s", want, top)
		}
	}
	if test := kmx(t, h, "test", "-h").stdout; !strings.Contains(test, "kmx test explain FILE") {
		t.Errorf("kmx test -h does not mention kmx test explain:\n%s", test)
	}
	v, version := kmx(t, h, "--version"), kmx(t, h, "version")
	if v.code != ExitOK || v.stdout == "" || v.stdout != version.stdout || v.stderr != "" {
		t.Errorf("kmx --version: exit %d, %q (kmx version: %q) %s", v.code, v.stdout, version.stdout, v.stderr)
	}
	if mcp := kmx(t, h, "mcp", "-h").stdout; strings.Contains(mcp, "--http") || strings.Contains(mcp, "tests only") || strings.Contains(mcp, " string ") {
		t.Errorf("kmx mcp -h lists a test-only flag or an unnamed value:\n%s", mcp)
	}
	if chat := kmx(t, h, "chat", "-h").stdout; strings.Contains(chat, "(default default)") || !strings.Contains(chat, `(default "default")`) || strings.Contains(chat, " value ") {
		t.Errorf("kmx chat -h:\n%s", chat)
	}
	file := filepath.Join(t.TempDir(), "a.agent.md")
	if err := os.WriteFile(file, []byte("Reply with exactly `ok`.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"test", file, "--frob"},
		{"test", file, "--trials", "x"},
		{"run", file, "--model"},
		{"check", filepath.Join(t.TempDir(), "nope.agent.md")},
		{"journal", "clear", "20260101T000000.000000000Z-00000000"},
		{"test", "explain"},
	} {
		r := kmx(t, h, args...)
		if r.code != ExitRefusal || strings.HasPrefix(r.stderr, "kmx: kmx") || !strings.HasPrefix(r.stderr, "kmx") {
			t.Errorf("%v: exit %d, the message doubles or lacks its prefix:\n%s", args, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, " -frob") || strings.Contains(r.stderr, " -trials") || strings.Contains(r.stderr, " -model") {
			t.Errorf("%v: a flag spelt with one dash:\n%s", args, r.stderr)
		}
	}
}

// TestTheInvocationBoundWasInNoHelp (issue 31 item 12): nothing said that
// one invocation runs at most five minutes until a run was cut by it.
// test -h and run -h name the bound and the ways out.
func TestTheInvocationBoundWasInNoHelp(t *testing.T) {
	h := home(t)
	for _, cmd := range []string{"test", "run"} {
		out := kmx(t, h, cmd, "-h").stdout
		for _, want := range []string{"at most 5 minutes (the invocation bound)", "--example ID", "--concurrency N"} {
			if !strings.Contains(out, want) {
				t.Errorf("kmx %s -h does not say %q:\n%s", cmd, want, out)
			}
		}
	}
}
