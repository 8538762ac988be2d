package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/failures"
)

// explainFixture is a state root and an agent file with retained failures.
type explainFixture struct {
	home, file, subject string
}

func newExplainFixture(t *testing.T, source string, recordedFor ...string) explainFixture {
	t.Helper()
	home := filepath.Join(t.TempDir(), "kmx")
	file := filepath.Join(t.TempDir(), "greeter.agent.md")
	if err := os.WriteFile(file, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	subject, err := failures.Subject(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, src := range recordedFor {
		sum := sha256.Sum256([]byte(src))
		zero, seventy, hundred := 0, 70, 100
		rec := failures.Record{
			Subject: subject, Revision: hex.EncodeToString(sum[:]),
			RecordedAt: time.Date(2026, 2, 1, 12, i, 0, 0, time.UTC), Selection: failures.SelectionFull,
			Agent: failures.Identity{Provider: "fake", Model: "fake-1"}, Judge: &failures.Identity{Provider: "fake", Model: "fake-judge"},
			Verdict: "fail",
			Examples: []failures.Example{
				{ID: "greets", Verdict: "fail", Deciding: &zero, Assertions: []failures.Assertion{
					{Index: 0, Type: "contains", Outcome: "fail", Expected: "hello", Actual: "goodbye, friend", Message: "the answer does not contain it"},
				}},
				{ID: "polite", Verdict: "unknown", Deciding: &zero, Assertions: []failures.Assertion{
					{Index: 0, Type: "llmJudge", Outcome: "unknown", Expected: "70", Actual: "scores 100, none", Scores: []*int{&hundred, nil}, Threshold: &seventy, Message: "the samples split"},
				}},
			},
		}
		if status, err := failures.Save(home, rec); status != failures.StatusRetained {
			t.Fatalf("save: %s %v", status, err)
		}
	}
	return explainFixture{home: home, file: file, subject: subject}
}

// explainEnv is an Env whose Getenv records every variable read, so a test
// can prove explain looks up nothing but the state folder.
type explainEnv struct {
	out, errOut bytes.Buffer
	mu          sync.Mutex
	read        map[string]bool
}

func (e *explainEnv) env(home string) Env {
	e.read = map[string]bool{}
	return Env{Stdin: strings.NewReader(""), Stdout: &e.out, Stderr: &e.errOut, Getenv: func(k string) string {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.read[k] = true
		if k == "KMX_HOME" {
			return home
		}
		return ""
	}}
}

func TestTestExplain(t *testing.T) {
	tests := []struct {
		name     string
		source   string   // the file's current text
		recorded []string // texts records were made for
		args     func(f explainFixture) []string
		wantCode int
		wantOut  []string
		wantNot  []string
		wantErr  string
		wantLeft int // records retained afterwards
	}{
		{
			name: "current failure", source: "v1", recorded: []string{"v1"},
			args:     func(f explainFixture) []string { return []string{"--file", f.file} },
			wantCode: ExitOK,
			wantOut: []string{"(local preview)", "recorded for the current text", "FAIL", "greets", `assertion 1 (contains) expected "hello": the answer does not contain it`,
				"UNKNOWN", "polite", "assertion 1 (llmJudge) threshold 70, scores 100, none: the samples split", "verdict fail", "model fake-1 (fake)", "judge fake-judge (fake)",
				"answer excerpts withheld; add --show-content", "run kmx test "},
			wantNot:  []string{"goodbye", "HISTORY"},
			wantLeft: 1,
		},
		{
			name: "edited file is history", source: "v2", recorded: []string{"v1"},
			args:     func(f explainFixture) []string { return []string{"--file", f.file} },
			wantCode: ExitOK,
			wantOut:  []string{"HISTORY: recorded for revision", "the file has changed since: this is history, not about the current text"},
			wantNot:  []string{"recorded for the current text"},
			wantLeft: 1,
		},
		{
			name: "show content", source: "v1", recorded: []string{"v1"},
			args:     func(f explainFixture) []string { return []string{"--file", f.file, "--show-content"} },
			wantCode: ExitOK,
			wantOut:  []string{`answer excerpt: "goodbye, friend"`},
			wantNot:  []string{"withheld"},
			wantLeft: 1,
		},
		{
			name: "nothing retained", source: "v1",
			args:     func(f explainFixture) []string { return []string{"--file", f.file} },
			wantCode: ExitFailure,
			wantOut:  []string{"nothing is retained for", "next: run kmx test "},
		},
		{
			name: "clear", source: "v2", recorded: []string{"v1", "v2"},
			args:     func(f explainFixture) []string { return []string{"--file", f.file, "--clear"} },
			wantCode: ExitOK,
			wantOut:  []string{"removed 2 retained failure records", "journals and other files are untouched"},
		},
		{
			name: "clear with nothing retained", source: "v1",
			args:     func(f explainFixture) []string { return []string{"--clear", "--file", f.file} },
			wantCode: ExitOK,
			wantOut:  []string{"nothing removed"},
		},
		{
			name: "no file", source: "v1", recorded: []string{"v1"},
			args:     func(f explainFixture) []string { return []string{} },
			wantCode: ExitRefusal, wantErr: "name the agent file: kmx test explain FILE", wantLeft: 1,
		},
		{
			// kmx test explain FILE was refused, asking for --file (issue 31 item 13).
			name: "positional file", source: "v1", recorded: []string{"v1"},
			args:     func(f explainFixture) []string { return []string{f.file} },
			wantCode: ExitOK,
			wantOut:  []string{"recorded for the current text", "FAIL", "greets"},
			wantLeft: 1,
		},
		{
			name: "file both positional and --file", source: "v1", recorded: []string{"v1"},
			args:     func(f explainFixture) []string { return []string{f.file, "--file", f.file} },
			wantCode: ExitRefusal, wantErr: "name one agent file, as FILE or --file, not both", wantLeft: 1,
		},
		{
			name: "clear with show-content", source: "v1", recorded: []string{"v1"},
			args:     func(f explainFixture) []string { return []string{"--file", f.file, "--clear", "--show-content"} },
			wantCode: ExitRefusal, wantErr: "--clear shows nothing", wantLeft: 1,
		},
		{
			name: "file in a missing folder", source: "v1",
			args: func(f explainFixture) []string {
				return []string{"--file", filepath.Join(f.file, "..", "nope", "x.agent.md")}
			},
			wantCode: ExitRefusal, wantErr: "check the path",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newExplainFixture(t, tc.source, tc.recorded...)
			var e explainEnv
			code := report(e.env(f.home), runTestExplain(context.Background(), e.env(f.home), tc.args(f)))
			out, errOut := e.out.String(), e.errOut.String()
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("stdout has %q:\n%s", w, out)
				}
			}
			if tc.wantErr != "" && !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, errOut)
			}
			recs, err := failures.Load(f.home, f.subject)
			if err != nil || len(recs) != tc.wantLeft {
				t.Errorf("afterwards %d records retained (%v), want %d", len(recs), err, tc.wantLeft)
			}
		})
	}
}

// TestTestExplainReadsOnlyStateLocation: explain is offline. The only
// environment it reads is where the state folder is; no key variable,
// endpoint or model setting is looked up.
func TestTestExplainReadsOnlyStateLocation(t *testing.T) {
	f := newExplainFixture(t, "v1", "v1")
	for _, args := range [][]string{
		{"--file", f.file, "--show-content", "--json"},
		{"--file", f.file, "--clear"},
	} {
		var e explainEnv
		env := e.env(f.home)
		if err := runTestExplain(context.Background(), env, args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		allowed := map[string]bool{"KMX_HOME": true, "XDG_CONFIG_HOME": true, "HOME": true, "LOCALAPPDATA": true}
		var read []string
		for k := range e.read {
			read = append(read, k)
			if !allowed[k] {
				t.Errorf("%v read environment variable %s", args, k)
			}
		}
		sort.Strings(read)
		if len(read) == 0 {
			t.Errorf("%v read no environment at all; the check proves nothing", args)
		}
	}
}

func TestTestExplainJSON(t *testing.T) {
	f := newExplainFixture(t, "v2", "v1", "v2")
	var e explainEnv
	if err := runTestExplain(context.Background(), e.env(f.home), []string{"--json", "--file", f.file}); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&e.out)
	dec.DisallowUnknownFields()
	var exp failures.Explanation
	if err := dec.Decode(&exp); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if exp.Schema != failures.ExplainSchema || exp.Label != "local preview" || exp.Subject != f.subject || len(exp.Records) != 2 {
		t.Fatalf("explanation = %+v", exp)
	}
	if exp.Records[0].Relation != failures.Current || exp.Records[1].Relation != failures.Historical {
		t.Errorf("relations = %s, %s; want current (v2) then historical (v1)", exp.Records[0].Relation, exp.Records[1].Relation)
	}
	if exp.ContentShown || exp.Records[0].Examples[0].Deciding.Actual != "" {
		t.Errorf("JSON carries content without --show-content")
	}

	var c explainEnv
	if err := runTestExplain(context.Background(), c.env(f.home), []string{"--json", "--clear", "--file", f.file}); err != nil {
		t.Fatal(err)
	}
	var cleared clearedReport
	if err := json.Unmarshal(c.out.Bytes(), &cleared); err != nil || cleared.Schema != ClearSchema || cleared.Removed != 2 {
		t.Errorf("clear JSON = %+v, %v", cleared, err)
	}
}

func TestTestExplainRefusesUnsafeState(t *testing.T) {
	f := newExplainFixture(t, "v1", "v1")
	if err := os.Chmod(f.home, 0o755); err != nil {
		t.Fatal(err)
	}
	var e explainEnv
	code := report(e.env(f.home), runTestExplain(context.Background(), e.env(f.home), []string{"--file", f.file}))
	if code != ExitRefusal || !strings.Contains(e.errOut.String(), "chmod 700") {
		t.Errorf("exit %d, stderr %q; want a refusal saying how to fix it", code, e.errOut.String())
	}
	fi, _ := os.Stat(f.home)
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("state root mode changed to %v; refuse, never repair", fi.Mode().Perm())
	}
}

// TestTestExplainCorruptOnly: records that exist but cannot be read are a
// refusal naming the way out, not "nothing retained".
func TestTestExplainCorruptOnly(t *testing.T) {
	f := newExplainFixture(t, "v1", "v1")
	sum := sha256.Sum256([]byte(f.subject))
	dir := filepath.Join(f.home, failures.DirName, hex.EncodeToString(sum[:]))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if strings.HasSuffix(en.Name(), ".json") {
			if err := os.WriteFile(filepath.Join(dir, en.Name()), []byte("{broken"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	var e explainEnv
	code := report(e.env(f.home), runTestExplain(context.Background(), e.env(f.home), []string{"--file", f.file}))
	if code != ExitRefusal || !strings.Contains(e.errOut.String(), "cannot be read") || !strings.Contains(e.errOut.String(), "--clear") {
		t.Errorf("exit %d, stderr %q; want a refusal pointing at --clear", code, e.errOut.String())
	}
}

// TestTestExplainKeepsSameNamedFilesApart: two agent files with one name
// (one agent ID) in two folders are two agents, as for journal list --file
// and --from (issue 31 item 14): kmx test explain of each shows only the
// failures its own runs kept, whether they came from a run of the file or
// of the folder holding both, and clearing one leaves the other.
func TestTestExplainKeepsSameNamedFilesApart(t *testing.T) {
	h := home(t)
	root := t.TempDir()
	files := map[string]string{}
	for _, dir := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		files[dir] = filepath.Join(root, dir, "same.agent.md")
		src := "---\nname: same\ndescription: one name in two folders\nmodel: fake\n---\nReply with exactly `answer from " + dir + "`.\n\n" +
			"## Examples\n\n```yaml\n- id: greets\n  input: hi\n  assert:\n    - contains: hello\n```\n"
		if err := os.WriteFile(files[dir], []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := kmx(t, h, "test", files["a"]); r.code != ExitFailure {
		t.Fatalf("test a: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := kmx(t, h, "test", root); r.code != ExitFailure {
		t.Fatalf("test the folder: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for dir, records := range map[string]string{"a": "2 retained Test failure records", "b": "1 retained Test failure record,"} {
		other := map[string]string{"a": "b", "b": "a"}[dir]
		r := kmx(t, h, "test", "explain", files[dir], "--show-content")
		if r.code != ExitOK || !strings.Contains(r.stdout, records) || !strings.Contains(r.stdout, `"answer from `+dir+`"`) || strings.Contains(r.stdout, "answer from "+other) {
			t.Errorf("explain %s/same.agent.md: exit %d, want %s with only its own answers\n%s%s", dir, r.code, records, r.stdout, r.stderr)
		}
	}
	if r := kmx(t, h, "test", "explain", files["b"], "--clear"); r.code != ExitOK || !strings.Contains(r.stdout, "removed 1 retained failure record ") {
		t.Fatalf("clear b: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := kmx(t, h, "test", "explain", files["a"]); r.code != ExitOK || !strings.Contains(r.stdout, "2 retained Test failure records") {
		t.Errorf("clearing b's failures touched a's: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
