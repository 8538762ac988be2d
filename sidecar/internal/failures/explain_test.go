package failures

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

func TestExplainCurrentOrHistorical(t *testing.T) {
	base := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name         string
		saved        []string // sources the records were made for, oldest first
		current      []byte   // nil: the file is gone
		wantRelation []string // newest first
		wantNote     string   // in the newest record's note
	}{
		{"unchanged file", []string{"v1"}, []byte("v1"), []string{Current}, "current text"},
		{"edited file", []string{"v1"}, []byte("v2"), []string{Historical}, "the file has changed since: this is history, not about the current text"},
		{"edited back and forth", []string{"v1", "v2"}, []byte("v1"), []string{Historical, Current}, "recorded for revision " + ShortRevision(revOf("v2"))},
		{"one byte differs", []string{"v1"}, []byte("v1\n"), []string{Historical}, "history"},
		{"deleted file", []string{"v1"}, nil, []string{Historical}, "no longer exists"},
		{"empty file is not a missing file", []string{""}, []byte{}, []string{Current}, "current text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			path, subject := agentFile(t, "whatever")
			for i, src := range tc.saved {
				if _, err := Save(root, record(subject, src, base.Add(time.Duration(i)*time.Minute), "greets")); err != nil {
					t.Fatal(err)
				}
			}
			exp, err := Explain(root, path, tc.current, false)
			if err != nil {
				t.Fatal(err)
			}
			if exp.Schema != ExplainSchema || exp.Label != "local preview" || exp.Subject != subject {
				t.Errorf("header = %q %q %q", exp.Schema, exp.Label, exp.Subject)
			}
			if (tc.current == nil) != (exp.CurrentRevision == "") {
				t.Errorf("currentRevision = %q for current=%v", exp.CurrentRevision, tc.current)
			}
			if len(exp.Records) != len(tc.wantRelation) {
				t.Fatalf("%d records, want %d", len(exp.Records), len(tc.wantRelation))
			}
			for i, r := range exp.Records {
				if r.Relation != tc.wantRelation[i] {
					t.Errorf("record %d relation = %s, want %s (note %q)", i, r.Relation, tc.wantRelation[i], r.Note)
				}
				if r.Relation == Current && (tc.current == nil || r.Revision != exp.CurrentRevision) {
					t.Errorf("record %d called current but its revision is not the current bytes'", i)
				}
			}
			if !strings.Contains(exp.Records[0].Note, tc.wantNote) {
				t.Errorf("note %q does not say %q", exp.Records[0].Note, tc.wantNote)
			}
		})
	}
}

func TestExplainShowContentGating(t *testing.T) {
	root := newRoot(t)
	path, subject := agentFile(t, "v1")
	if _, err := Save(root, record(subject, "v1", time.Now(), "greets", "polite")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		show       bool
		wantActual string
	}{{false, ""}, {true, "goodbye, friend"}}
	for _, tc := range tests {
		t.Run(map[bool]string{false: "withheld", true: "shown"}[tc.show], func(t *testing.T) {
			exp, err := Explain(root, path, []byte("v1"), tc.show)
			if err != nil {
				t.Fatal(err)
			}
			if exp.ContentShown != tc.show {
				t.Errorf("contentShown = %v", exp.ContentShown)
			}
			ex := exp.Records[0].Examples[0]
			if ex.Deciding == nil || ex.Deciding.Type != "contains" || ex.Deciding.Expected != "hello" {
				t.Fatalf("deciding = %+v; want the contains assertion with its expected text", ex.Deciding)
			}
			if ex.Deciding.Actual != tc.wantActual || ex.Assertions[0].Actual != tc.wantActual {
				t.Errorf("actual = %q / %q, want %q", ex.Deciding.Actual, ex.Assertions[0].Actual, tc.wantActual)
			}
			if ex.ContentWithheld == tc.show {
				t.Errorf("contentWithheld = %v with show=%v", ex.ContentWithheld, tc.show)
			}
			// Scores and thresholds are not content: always shown.
			j := ex.Assertions[1]
			if j.Threshold == nil || *j.Threshold != 70 || len(j.Scores) != 2 {
				t.Errorf("judge assertion lost its scores/threshold: %+v", j)
			}
			data, _ := json.Marshal(exp)
			if strings.Contains(string(data), "goodbye") != tc.show {
				t.Errorf("JSON contains the answer = %v with show=%v", !tc.show, tc.show)
			}
		})
	}
}

func TestExplainListsCorruptBesideGood(t *testing.T) {
	root := newRoot(t)
	path, subject := agentFile(t, "v1")
	if _, err := Save(root, record(subject, "v1", time.Now(), "greets")); err != nil {
		t.Fatal(err)
	}
	dir := subjectStore(root, subject)
	bad := time.Now().UTC().Add(time.Hour).Format(recordTimeLayout) + "-aaaaaaaaaaaa.json"
	if err := os.WriteFile(filepath.Join(dir, bad), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	exp, err := Explain(root, path, []byte("v1"), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(exp.Records) != 1 || len(exp.Corrupt) != 1 || exp.Corrupt[0].Name != bad {
		t.Errorf("records %d, corrupt %+v; want 1 and %s", len(exp.Records), exp.Corrupt, bad)
	}
}

func TestExplainCreatesNothing(t *testing.T) {
	root := newRoot(t)
	path, _ := agentFile(t, "v1")
	exp, err := Explain(root, path, []byte("v1"), true)
	if err != nil || len(exp.Records) != 0 || exp.Records == nil {
		t.Fatalf("Explain = %+v, %v; want an empty (non-nil) record list", exp.Records, err)
	}
	if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Explain created the state root (%v)", err)
	}
}

// TestImportGraphIsOffline pins Explain's zero-model guarantee: nothing this
// package links can reach a model route, the Sessions service, a journal,
// the runner or the network.
func TestImportGraphIsOffline(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %d packages; the check would prove nothing", len(deps))
	}
	forbidden := []string{
		"github.com/kmxdev/kmx/sidecar/internal/route",
		"github.com/kmxdev/kmx/sidecar/internal/sessions",
		"github.com/kmxdev/kmx/sidecar/internal/journal",
		"github.com/kmxdev/kmx/sidecar/internal/invocation",
		"github.com/kmxdev/kmx/sidecar/internal/readback",
		"github.com/kmxdev/kmx/sidecar/internal/runner",
		"github.com/kmxdev/kmx/sidecar/internal/harness",
		"github.com/kmxdev/kmx/sidecar/internal/judge",
		"database/sql",
		"net",
		"net/http",
		"google.golang.org/grpc",
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("failures depends on %s", d)
			}
		}
	}
}

func BenchmarkExplain(b *testing.B) {
	root := filepath.Join(b.TempDir(), "kmx")
	p := filepath.Join(b.TempDir(), "a.agent.md")
	if err := os.WriteFile(p, []byte("v1"), 0o644); err != nil {
		b.Fatal(err)
	}
	subject, _ := Subject(p)
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	for i := range MaxRecordsPerSubject {
		if _, err := Save(root, record(subject, "v1", time.Unix(int64(i), 0), ids...)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		exp, err := Explain(root, p, []byte("v1"), false)
		if err != nil || len(exp.Records) != MaxRecordsPerSubject {
			b.Fatal(len(exp.Records), err)
		}
	}
}

// TestExplainFollowsThePairRevision: with a sibling examples file the
// runner records the pair's revision, so Explain compares with it, and an
// edit of the examples file alone makes a record history.
func TestExplainFollowsThePairRevision(t *testing.T) {
	root := newRoot(t)
	path, subject := agentFile(t, "agent")
	sibling := agentfile.SiblingExamplesPath(path)
	if err := os.WriteFile(sibling, []byte("- id: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := record(subject, "", time.Now().UTC(), "a")
	rec.Revision = agentfile.PairRevision([]byte("agent"), []byte("- id: a\n"))
	if _, err := Save(root, rec); err != nil {
		t.Fatal(err)
	}
	exp, err := Explain(root, path, []byte("agent"), false)
	if err != nil || exp.Records[0].Relation != Current {
		t.Fatalf("with both files unchanged: %v %+v", err, exp.Records)
	}
	if err := os.WriteFile(sibling, []byte("- id: b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exp, err = Explain(root, path, []byte("agent"), false)
	if err != nil || exp.Records[0].Relation != Historical {
		t.Fatalf("after editing the examples file: %v %+v", err, exp.Records)
	}
}

// TestExplainFileSaysWhatToChange: a file that is gone is explained (all
// history), and a file kmx cannot read is refused with the next step.
func TestExplainFileSaysWhatToChange(t *testing.T) {
	root := testutil.PrivateDir(t)
	gonePath := filepath.Join(t.TempDir(), "gone.agent.md")
	exp, gone, err := ExplainFile(root, gonePath, "", false)
	if err != nil || !gone || len(exp.Records) != 0 {
		t.Fatalf("gone file: %+v %v %v", exp, gone, err)
	}
	dir := filepath.Join(t.TempDir(), "dir.agent.md")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, _, err = ExplainFile(root, "named.agent.md", dir, false)
	if err == nil || !strings.Contains(err.Error(), "named.agent.md") || problem.NextStep(err) == "" {
		t.Fatalf("unreadable file: %v (next %q)", err, problem.NextStep(err))
	}
}
