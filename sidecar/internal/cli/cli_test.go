package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type result struct {
	code           int
	stdout, stderr string
}

// kmx runs one command line in-process with KMX_HOME set to home.
func kmx(t *testing.T, home string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "KMX_HOME" {
			return home
		}
		return ""
	}}
	code := Main(context.Background(), args, env)
	return result{code, out.String(), errb.String()}
}

func home(t *testing.T) string {
	t.Helper()
	h := filepath.Join(t.TempDir(), "kmx")
	if err := os.Mkdir(h, 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

func demoFile(name string) string { return filepath.Join("..", "..", "..", "testdata", "demo", name) }

func writeAgent(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.agent.md")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// cliCase is one kmx invocation: its arguments, the exit code it must
// return, and text its stdout and stderr must contain.
type cliCase struct {
	name   string
	args   []string
	code   int
	stdout string
	stderr string
}

// checkCLI runs each case as kmx PREFIX ARGS... in the state folder h; no
// case may print a stack trace.
func checkCLI(t *testing.T, h string, prefix []string, cases []cliCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := kmx(t, h, append(slices.Clone(prefix), tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
				t.Fatalf("stack trace on stderr:\n%s", r.stderr)
			}
		})
	}
}

func TestTestJSONIsTheSafeReport(t *testing.T) {
	h := home(t)
	r := kmx(t, h, "test", demoFile("support-triage.agent.md"), "--json")
	if r.code != ExitFailure {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON report: %v\n%s", err, r.stdout)
	}
	for _, key := range []string{"schema", "label", "runId", "journalPath", "agent", "route", "verdict", "journaled", "durationMs", "examples"} {
		if _, ok := rep[key]; !ok {
			t.Errorf("report lacks %q", key)
		}
	}
	if rep["label"] != "local preview" || rep["verdict"] != "fail" || rep["journaled"] != true {
		t.Errorf("label %v verdict %v journaled %v", rep["label"], rep["verdict"], rep["journaled"])
	}
	// No instructions, inputs or answers in a Test report.
	for _, secret := range []string{"You label support tickets", "Why was I charged twice", `"answer"`} {
		if strings.Contains(r.stdout, secret) {
			t.Errorf("the safe report contains %q", secret)
		}
	}
}

func TestJUnitNeverPassesUnknown(t *testing.T) {
	h := home(t)
	agent := writeAgent(t, "Reply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: good\n  input: hi\n  assert:\n    - contains: ok\n- id: vague\n  input: hi\n  assert:\n    - llmJudge:\n        rubric: is it good\n        judgeModel: fake\n- id: bad\n  input: hi\n  assert:\n    - contains: nope\n```\n")
	out := filepath.Join(t.TempDir(), "junit.xml")
	r := kmx(t, h, "test", agent, "--model", "fake", "--junit", out)
	if r.code != ExitFailure {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Suites[0]
	if s.Tests != 3 || s.Failures != 1 || s.Errors != 1 {
		t.Fatalf("tests %d failures %d errors %d", s.Tests, s.Failures, s.Errors)
	}
	byName := map[string]junitCase{}
	for _, c := range s.Cases {
		byName[c.Name] = c
	}
	if c := byName["good"]; c.Failure != nil || c.Error != nil {
		t.Errorf("good: %+v", c)
	}
	if c := byName["vague"]; c.Error == nil || !strings.Contains(c.Error.Message, "inconclusive") || c.Failure != nil {
		t.Errorf("vague (unknown) must be an <error> saying inconclusive: %+v", c)
	}
	if c := byName["bad"]; c.Failure == nil {
		t.Errorf("bad: %+v", c)
	}
}

// TestRefusalPrintsNothingOnStdout: a refused run prints only the refusal
// (on stderr), not a header naming the file as if it had started.
func TestRefusalPrintsNothingOnStdout(t *testing.T) {
	h := home(t)
	for _, args := range [][]string{
		{"test", demoFile("release-notes.agent.md"), "--model", "llama3"},
		{"run", demoFile("release-notes.agent.md"), "--example", "nope"},
	} {
		r := kmx(t, h, args...)
		if r.code != ExitRefusal || r.stdout != "" || !strings.Contains(r.stderr, "next: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestOversizedAgentFileIsRefused: one 8 MiB cap for every command that
// reads an agent file, refused with what to change (exit 2).
func TestOversizedAgentFileIsRefused(t *testing.T) {
	h := home(t)
	big := filepath.Join(t.TempDir(), "big.agent.md")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 8<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", big}, {"test", big}, {"run", big}, {"test", "explain", "--file", big}} {
		r := kmx(t, h, args...)
		if r.code != ExitRefusal || !strings.Contains(r.stderr, "larger than 8 MiB") || !strings.Contains(r.stderr, "next: ") {
			t.Errorf("%v: exit %d\nstderr:\n%s", args, r.code, r.stderr)
		}
	}
}
