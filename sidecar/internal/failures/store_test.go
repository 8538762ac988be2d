package failures

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kmxdev/kmx/sidecar/internal/state"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// ghToken builds a credential-shaped string at run time so no token-like
// literal is ever committed.
func ghToken() string { return "gh" + "p_" + strings.Repeat("a", 36) }

func revOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func intp(i int) *int { return &i }

// newRoot returns a state root that does not exist yet, inside a private
// temp folder, as a first run would meet it.
func newRoot(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "kmx")
}

// agentFile writes an agent file in its own folder and returns its path
// and subject.
func agentFile(t *testing.T, content string) (string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "greeter.agent.md")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Subject(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

func example(id string) Example {
	return Example{
		ID: id, Verdict: "fail", Message: "assertion 1 (contains) failed", Deciding: intp(0),
		Assertions: []Assertion{
			{Index: 0, Type: "contains", Outcome: "fail", Expected: "hello", Actual: "goodbye, friend", Message: "the answer does not contain it"},
			{Index: 1, Type: "llmJudge", Outcome: "pass", Expected: "70", Actual: "scores 100, 90", Scores: []*int{intp(100), intp(90)}, Threshold: intp(70), Message: "both samples at or above 70"},
		},
	}
}

func record(subject, source string, at time.Time, ids ...string) Record {
	exs := make([]Example, len(ids))
	for i, id := range ids {
		exs[i] = example(id)
	}
	return Record{
		Subject: subject, Revision: revOf(source), RecordedAt: at, Selection: SelectionFull,
		Agent: Identity{Provider: "fake", Model: "fake-1"}, Judge: &Identity{Provider: "fake", Model: "fake-judge"},
		Verdict: "fail", Examples: exs,
	}
}

func subjectStore(root, subject string) string {
	return filepath.Join(root, DirName, subjectDirName(subject))
}

func recordFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := recordNames(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestSaveLoadRoundTrip(t *testing.T) {
	root := newRoot(t)
	_, subject := agentFile(t, "v1")
	at := time.Date(2026, 3, 4, 5, 6, 7, 89, time.FixedZone("x", 3600))
	status, err := Save(root, record(subject, "v1", at, "greets", "polite"))
	if status != StatusRetained || err != nil {
		t.Fatalf("Save = %q, %v; want retained", status, err)
	}
	recs, err := Load(root, subject)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Load = %d records, %v; want 1", len(recs), err)
	}
	got := recs[0]
	if got.Schema != Schema || got.Subject != subject || got.Revision != revOf("v1") || !got.RecordedAt.Equal(at) || got.RecordedAt.Location() != time.UTC {
		t.Errorf("header = %+v", got)
	}
	if got.Judge == nil || got.Judge.Model != "fake-judge" || got.Agent.Provider != "fake" {
		t.Errorf("identities = %+v / %+v", got.Agent, got.Judge)
	}
	if len(got.Examples) != 2 || got.Examples[1].ID != "polite" || *got.Examples[0].Deciding != 0 {
		t.Fatalf("examples = %+v", got.Examples)
	}
	a := got.Examples[0].Assertions[1]
	if a.Threshold == nil || *a.Threshold != 70 || len(a.Scores) != 2 || *a.Scores[1] != 90 {
		t.Errorf("judge assertion = %+v", a)
	}

	dir := subjectStore(root, subject)
	for _, p := range []string{root, filepath.Join(root, DirName), dir} {
		if m := testutil.Mode(t, p); m != 0o700 {
			t.Errorf("%s mode %04o, want 0700", p, m)
		}
	}
	names := recordFiles(t, dir)
	if len(names) != 1 || !strings.HasPrefix(names[0], "20260304T040607.000000089Z-") {
		t.Fatalf("record names = %v", names)
	}
	for _, p := range []string{filepath.Join(dir, names[0]), filepath.Join(dir, subjectFile)} {
		if m := testutil.Mode(t, p); m != 0o600 {
			t.Errorf("%s mode %04o, want 0600", p, m)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, subjectFile)); string(b) != subject {
		t.Errorf("subject file = %q, want %q", b, subject)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("subject folder holds %d entries (a temp file left behind?), want 2", len(entries))
	}
}

// TestRecordHoldsNoPrivateContent: the record file carries only the fields
// of the projection; there is no field for instructions, input, endpoint,
// run ID or rationale, and the strict decoder refuses one if added.
func TestRecordHoldsNoPrivateContent(t *testing.T) {
	root := newRoot(t)
	_, subject := agentFile(t, "v1")
	if _, err := Save(root, record(subject, "v1", time.Now(), "greets")); err != nil {
		t.Fatal(err)
	}
	dir := subjectStore(root, subject)
	data, err := os.ReadFile(filepath.Join(dir, recordFiles(t, dir)[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"instructions", "input", "endpoint", "runId", "journal", "rationale", "reasoning", "key"} {
		if strings.Contains(strings.ToLower(string(data)), `"`+strings.ToLower(k)+`"`) {
			t.Errorf("record has a %q field:\n%s", k, data)
		}
	}
}

func TestSaveRefusesAndWritesNothing(t *testing.T) {
	_, subject := agentFile(t, "v1")
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("ex-%02d", i)
		}
		return out
	}
	tok := ghToken()
	tests := []struct {
		name   string
		edit   func(*Record)
		reason string
	}{
		{"eleven non-pass examples", func(r *Record) { *r = record(subject, "v1", time.Now(), ids(11)...) }, "more than the 10"},
		{"no examples", func(r *Record) { r.Examples = nil }, "no non-pass examples"},
		{"passing file verdict", func(r *Record) { r.Verdict = "pass" }, "only a non-pass Test"},
		{"passing example", func(r *Record) { r.Examples[0].Verdict = "pass" }, "only non-pass examples"},
		{"other schema", func(r *Record) { r.Schema = "kmx.eval-failures/v2" }, "schema"},
		{"revision not sha256", func(r *Record) { r.Revision = "abc123" }, "revision"},
		{"upper-case revision", func(r *Record) { r.Revision = strings.ToUpper(r.Revision) }, "revision"},
		{"relative subject", func(r *Record) { r.Subject = "greeter.agent.md" }, "subject"},
		{"unclean subject", func(r *Record) { r.Subject = filepath.Dir(subject) + "/./greeter.agent.md" }, "subject"},
		{"bad selection", func(r *Record) { r.Selection = "some" }, "selection"},
		{"no agent model", func(r *Record) { r.Agent.Model = "" }, "agent provider or model"},
		{"no judge provider", func(r *Record) { r.Judge.Provider = "" }, "judge provider or model"},
		{"duplicate example ID", func(r *Record) { r.Examples = append(r.Examples, example(r.Examples[0].ID)) }, "repeats"},
		{"deciding out of range", func(r *Record) { r.Examples[0].Deciding = intp(5) }, "deciding assertion 5"},
		{"negative deciding", func(r *Record) { r.Examples[0].Deciding = intp(-1) }, "deciding assertion -1"},
		{"assertion without type", func(r *Record) { r.Examples[0].Assertions[0].Type = "" }, "assertion 1"},
		{"credential in actual", func(r *Record) { r.Examples[0].Assertions[0].Actual = "key is " + tok }, "credential-shaped"},
		{"credential in message", func(r *Record) { r.Examples[0].Message = tok }, "credential-shaped"},
		{"credential in judge model", func(r *Record) { r.Judge.Model = tok }, "credential-shaped"},
		{"oversized record", func(r *Record) {
			var as []Assertion
			for i := range 400 {
				as = append(as, Assertion{Index: i, Type: "contains", Outcome: "fail", Expected: strings.Repeat("x", MaxFieldRunes), Message: "m"})
			}
			r.Examples[0].Assertions = as
			r.Examples[0].Deciding = nil
		}, "cap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			rec := record(subject, "v1", time.Now(), "greets", "polite")
			tc.edit(&rec)
			status, err := Save(root, rec)
			if status != StatusUnavailable || err == nil {
				t.Fatalf("Save = %q, %v; want unavailable with a reason", status, err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("reason %q does not say %q", err, tc.reason)
			}
			if strings.Contains(err.Error(), tok) {
				t.Errorf("reason quotes the credential: %q", err)
			}
			if _, statErr := os.Lstat(filepath.Join(root, DirName)); !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("store folder exists after a refused Save (err %v)", statErr)
			}
		})
	}
}

func TestSaveBoundsFreeText(t *testing.T) {
	root := newRoot(t)
	_, subject := agentFile(t, "v1")
	rec := record(subject, "v1", time.Now(), "greets")
	rec.Examples[0].Assertions[0].Actual = strings.Repeat("é", 500)
	rec.Examples[0].Assertions[0].Expected = strings.Repeat("x", 300)
	rec.Examples[0].Message = "bad \xff byte"
	if _, err := Save(root, rec); err != nil {
		t.Fatal(err)
	}
	recs, err := Load(root, subject)
	if err != nil {
		t.Fatal(err)
	}
	a := recs[0].Examples[0].Assertions[0]
	for name, s := range map[string]string{"actual": a.Actual, "expected": a.Expected} {
		if n := utf8.RuneCountInString(s); n != MaxFieldRunes || !strings.HasSuffix(s, "…") {
			t.Errorf("%s has %d runes (want %d, ending …)", name, n, MaxFieldRunes)
		}
	}
	if m := recs[0].Examples[0].Message; !utf8.ValidString(m) || !strings.Contains(m, "\uFFFD") {
		t.Errorf("message = %q, want valid UTF-8 with a replacement rune", m)
	}
}

func TestSaveKeepsNewestTen(t *testing.T) {
	tests := []struct{ saves, want int }{{1, 1}, {10, 10}, {11, 10}, {14, 10}}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.saves), func(t *testing.T) {
			root := newRoot(t)
			_, subject := agentFile(t, "v1")
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range tc.saves {
				rec := record(subject, fmt.Sprintf("v%d", i), base.Add(time.Duration(i)*time.Second), fmt.Sprintf("save-%02d", i))
				if status, err := Save(root, rec); status != StatusRetained || err != nil {
					t.Fatalf("save %d: %q, %v", i, status, err)
				}
			}
			if n := len(recordFiles(t, subjectStore(root, subject))); n != tc.want {
				t.Errorf("%d record files, want %d", n, tc.want)
			}
			recs, err := Load(root, subject)
			if err != nil || len(recs) != tc.want {
				t.Fatalf("Load = %d, %v; want %d", len(recs), err, tc.want)
			}
			for i, r := range recs {
				want := fmt.Sprintf("save-%02d", tc.saves-1-i)
				if r.Examples[0].ID != want {
					t.Errorf("record %d is %s, want %s (newest first, oldest deleted)", i, r.Examples[0].ID, want)
				}
			}
		})
	}
}

// TestSaveKeepsJustWrittenRecord: a clock that stepped back must not make
// prune delete the record whose IDs the runner is about to report.
func TestSaveKeepsJustWrittenRecord(t *testing.T) {
	root := newRoot(t)
	_, subject := agentFile(t, "v1")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range MaxRecordsPerSubject {
		if _, err := Save(root, record(subject, "v1", base.Add(time.Duration(i)*time.Hour), fmt.Sprintf("later-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Save(root, record(subject, "v1", base.Add(-time.Hour), "stepped-back")); err != nil {
		t.Fatal(err)
	}
	recs, err := Load(root, subject)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != MaxRecordsPerSubject || recs[len(recs)-1].Examples[0].ID != "stepped-back" {
		t.Errorf("got %d records, oldest %q; want %d keeping stepped-back", len(recs), recs[len(recs)-1].Examples[0].ID, MaxRecordsPerSubject)
	}
}

func TestUnsafeStoreRefusedNeverRepaired(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix modes; Windows DACLs are checked by the state package's own tests")
	}
	tests := []struct {
		name    string
		breakIt func(t *testing.T, root, dir string) string // returns the path it broke
	}{
		{"broad state root", func(t *testing.T, root, dir string) string { return chmod(t, root, 0o755) }},
		{"broad store folder", func(t *testing.T, root, dir string) string { return chmod(t, filepath.Join(root, DirName), 0o750) }},
		{"broad subject folder", func(t *testing.T, root, dir string) string { return chmod(t, dir, 0o705) }},
		{"broad subject file", func(t *testing.T, root, dir string) string { return chmod(t, filepath.Join(dir, subjectFile), 0o644) }},
		{"broad record file", func(t *testing.T, root, dir string) string {
			return chmod(t, filepath.Join(dir, recordFiles(t, dir)[0]), 0o640)
		}},
		{"symlinked store folder", func(t *testing.T, root, dir string) string {
			p := filepath.Join(root, DirName)
			real := filepath.Join(root, "elsewhere")
			if err := os.Rename(p, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			_, subject := agentFile(t, "v1")
			if _, err := Save(root, record(subject, "v1", time.Now(), "first")); err != nil {
				t.Fatal(err)
			}
			dir := subjectStore(root, subject)
			broken := tc.breakIt(t, root, dir)
			before, _ := os.Lstat(broken)

			status, err := Save(root, record(subject, "v1", time.Now(), "second"))
			var unsafe *state.UnsafeError
			if status != StatusUnavailable || !errors.As(err, &unsafe) {
				t.Errorf("Save = %q, %v; want unavailable with *state.UnsafeError", status, err)
			}
			if _, err := Load(root, subject); !errors.As(err, &unsafe) {
				t.Errorf("Load error = %v; want *state.UnsafeError", err)
			}
			if _, err := Clear(root, subject); !errors.As(err, &unsafe) {
				t.Errorf("Clear error = %v; want *state.UnsafeError", err)
			}
			if _, err := Explain(root, subject, []byte("v1"), false); !errors.As(err, &unsafe) {
				t.Errorf("Explain error = %v; want *state.UnsafeError", err)
			}
			after, _ := os.Lstat(broken)
			if before.Mode() != after.Mode() {
				t.Errorf("%s mode changed from %v to %v: kmx must refuse, never repair", broken, before.Mode(), after.Mode())
			}
		})
	}
}

func chmod(t *testing.T, p string, m os.FileMode) string {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadReportsCorruptRecords(t *testing.T) {
	_, subject := agentFile(t, "v1")
	_, other := agentFile(t, "v1")
	tests := []struct {
		name   string
		body   func(good []byte) []byte
		reason string
	}{
		{"garbage", func([]byte) []byte { return []byte("{not json") }, "not a valid record"},
		{"unknown field", func(g []byte) []byte {
			return []byte(strings.Replace(string(g), `"schema"`, `"instructions": "be nice", "schema"`, 1))
		}, "unknown field"},
		{"other schema", func(g []byte) []byte {
			return []byte(strings.Replace(string(g), Schema, "kmx.eval-failures/v9", 1))
		}, "schema"},
		{"trailing data", func(g []byte) []byte { return append(append([]byte{}, g...), []byte(`{"x":1}`)...) }, "data after"},
		{"too large", func([]byte) []byte { return []byte(strings.Repeat(" ", MaxRecordBytes+1)) }, "larger than"},
		{"another subject", func(g []byte) []byte {
			return []byte(strings.Replace(string(g), jsonString(subject), jsonString(other), 1))
		}, "different file"},
		{"passing verdict", func(g []byte) []byte {
			return []byte(strings.Replace(string(g), `"verdict": "fail"`, `"verdict": "pass"`, 1))
		}, "non-pass"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			if _, err := Save(root, record(subject, "v1", base, "good")); err != nil {
				t.Fatal(err)
			}
			dir := subjectStore(root, subject)
			good, err := os.ReadFile(filepath.Join(dir, recordFiles(t, dir)[0]))
			if err != nil {
				t.Fatal(err)
			}
			bad := base.Add(time.Hour).Format(recordTimeLayout) + "-0123456789ab" + recordExt
			if err := os.WriteFile(filepath.Join(dir, bad), tc.body(good), 0o600); err != nil {
				t.Fatal(err)
			}
			recs, err := Load(root, subject)
			var ce *CorruptError
			if !errors.As(err, &ce) || len(ce.Records) != 1 || ce.Records[0].Name != bad {
				t.Fatalf("Load error = %v; want a CorruptError naming %s", err, bad)
			}
			if !strings.Contains(ce.Records[0].Reason, tc.reason) {
				t.Errorf("reason %q does not say %q", ce.Records[0].Reason, tc.reason)
			}
			if len(recs) != 1 || recs[0].Examples[0].ID != "good" {
				t.Errorf("readable records = %d; the good one must still load", len(recs))
			}
			if n, err := Clear(root, subject); err != nil || n != 2 {
				t.Errorf("Clear = %d, %v; want both records (good and corrupt) removed", n, err)
			}
		})
	}
}

func jsonString(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

func TestLoadMissingStoreCreatesNothing(t *testing.T) {
	root := newRoot(t)
	_, subject := agentFile(t, "v1")
	recs, err := Load(root, subject)
	if err != nil || len(recs) != 0 {
		t.Fatalf("Load = %d, %v; want none", len(recs), err)
	}
	if n, err := Clear(root, subject); err != nil || n != 0 {
		t.Fatalf("Clear = %d, %v; want 0", n, err)
	}
	if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state root exists after Load/Clear of nothing (%v): reading must create nothing", err)
	}
}

func TestClearIsConfinedToSubject(t *testing.T) {
	root := newRoot(t)
	_, mine := agentFile(t, "v1")
	_, theirs := agentFile(t, "v1")
	for i := range 3 {
		if _, err := Save(root, record(mine, "v1", time.Now(), fmt.Sprintf("m%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Save(root, record(theirs, "v1", time.Now(), "t0")); err != nil {
		t.Fatal(err)
	}
	journals, err := state.EnsurePrivateDir(root, "local-preview", "journals")
	if err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(journals, "20260101T000000.000000000Z-abcdef.db")
	if err := os.WriteFile(journal, []byte("sqlite"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		extra       string // a file not written by kmx in my subject folder
		wantRemoved int
		wantDirGone bool
	}{
		{"only kmx files", "", 3, true},
		{"a stranger's file stays", "notes.txt", 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := subjectStore(root, mine)
			if len(recordFiles(t, dir)) == 0 {
				for i := range 3 {
					if _, err := Save(root, record(mine, "v1", time.Now(), fmt.Sprintf("m%d", i))); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.extra != "" {
				if err := os.WriteFile(filepath.Join(dir, tc.extra), []byte("mine"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			n, err := Clear(root, mine)
			if err != nil || n != tc.wantRemoved {
				t.Fatalf("Clear = %d, %v; want %d", n, err, tc.wantRemoved)
			}
			if recs, err := Load(root, mine); err != nil || len(recs) != 0 {
				t.Errorf("after Clear, Load = %d, %v; want none", len(recs), err)
			}
			_, statErr := os.Lstat(dir)
			if gone := errors.Is(statErr, os.ErrNotExist); gone != tc.wantDirGone {
				t.Errorf("subject folder gone = %v, want %v", gone, tc.wantDirGone)
			}
			if tc.extra != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.extra)); err != nil {
					t.Errorf("Clear removed a file it did not write: %v", err)
				}
			}
			if recs, err := Load(root, theirs); err != nil || len(recs) != 1 {
				t.Errorf("other subject: Load = %d, %v; want its 1 record untouched", len(recs), err)
			}
			if _, err := os.Stat(journal); err != nil {
				t.Errorf("Clear touched the journal: %v", err)
			}
		})
	}
}

func TestSubject(t *testing.T) {
	real := t.TempDir()
	file := filepath.Join(real, "greeter.agent.md")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	physical, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(physical, "greeter.agent.md")
	links := t.TempDir()
	linkDir := filepath.Join(links, "via-link")
	if err := os.Symlink(real, linkDir); err != nil {
		t.Fatal(err)
	}
	linkFile := filepath.Join(links, "alias.agent.md")
	if err := os.Symlink(file, linkFile); err != nil {
		t.Fatal(err)
	}
	physLinks, _ := filepath.EvalSymlinks(links)

	tests := []struct {
		name, path, want, errText string
	}{
		{"plain path", file, want, ""},
		{"through a symlinked folder", filepath.Join(linkDir, "greeter.agent.md"), want, ""},
		{"with dot segments", filepath.Join(real, "sub", "..", ".", "greeter.agent.md"), want, ""},
		{"deleted file keeps its subject", filepath.Join(linkDir, "gone.agent.md"), filepath.Join(physical, "gone.agent.md"), ""},
		{"symlinked leaf is its own subject", linkFile, filepath.Join(physLinks, "alias.agent.md"), ""},
		{"empty", "", "", "no agent file path"},
		{"a folder", real, "", "folder"},
		{"missing parent", filepath.Join(real, "nope", "x.agent.md"), "", "resolve the folder"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Subject(tc.path)
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("Subject(%q) = %q, %v; want an error saying %q", tc.path, got, err, tc.errText)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Subject(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
		})
	}
}

func TestSubjectRelativePath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.agent.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	got, err := Subject("a.agent.md")
	phys, _ := filepath.EvalSymlinks(dir)
	if err != nil || got != filepath.Join(phys, "a.agent.md") {
		t.Fatalf("Subject = %q, %v", got, err)
	}
}

// TestSymlinkedPathSharesRecords: a record saved under one spelling of the
// path is found under another that reaches the same file.
func TestSymlinkedPathSharesRecords(t *testing.T) {
	root := newRoot(t)
	path, subject := agentFile(t, "v1")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Dir(path), link); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(root, record(subject, "v1", time.Now(), "greets")); err != nil {
		t.Fatal(err)
	}
	exp, err := Explain(root, filepath.Join(link, filepath.Base(path)), []byte("v1"), false)
	if err != nil || len(exp.Records) != 1 || exp.Subject != subject {
		t.Fatalf("Explain via symlink = %d records, subject %q, %v; want 1 for %q", len(exp.Records), exp.Subject, err, subject)
	}
}

func BenchmarkSave(b *testing.B) {
	root := filepath.Join(b.TempDir(), "kmx")
	p := filepath.Join(b.TempDir(), "a.agent.md")
	if err := os.WriteFile(p, []byte("v1"), 0o644); err != nil {
		b.Fatal(err)
	}
	subject, _ := Subject(p)
	ids := make([]string, MaxExamplesPerRecord)
	for i := range ids {
		ids[i] = fmt.Sprintf("ex-%d", i)
	}
	rec := record(subject, "v1", time.Time{}, ids...)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Save(root, rec); err != nil {
			b.Fatal(err)
		}
	}
}
