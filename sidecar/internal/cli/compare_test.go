package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/compare"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
)

// modelEndpoint is a real OpenAI-compatible endpoint on 127.0.0.1 that
// answers per model: answer(model, input). It counts requests per model.
type modelEndpoint struct {
	srv    *httptest.Server
	answer func(model, input string) string
	// usage, when set, is the `usage` object of a model's replies (nil:
	// none, as an endpoint that reports no usage).
	usage func(model string) map[string]any
	mu    sync.Mutex
	calls map[string]int
	auth  []string
}

func newModelEndpoint(t *testing.T, useTLS bool, answer func(model, input string) string) *modelEndpoint {
	t.Helper()
	e := &modelEndpoint{answer: answer, calls: map[string]int{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 2<<20))
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		input := ""
		for _, m := range req.Messages {
			if m.Role == "user" {
				input = m.Content
			}
		}
		e.mu.Lock()
		e.calls[req.Model]++
		e.auth = append(e.auth, r.Header.Get("Authorization"))
		e.mu.Unlock()
		body := map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": e.answer(req.Model, input)}}},
		}
		if e.usage != nil {
			if u := e.usage(req.Model); u != nil {
				body["usage"] = u
			}
		}
		reply, _ := json.Marshal(body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	})
	if useTLS {
		e.srv = httptest.NewTLSServer(h)
	} else {
		e.srv = httptest.NewServer(h)
	}
	t.Cleanup(e.srv.Close)
	return e
}

func (e *modelEndpoint) base() string { return e.srv.URL + "/v1" }

func (e *modelEndpoint) count() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, v := range e.calls {
		out[k] = v
	}
	return out
}

const compareAgent = "---\nname: notes\n---\nYou write release notes.\n\n## Examples\n\n```yaml\n" +
	"- id: weekly\n  input: this week\n  assert:\n    - contains: \"Release notes:\"\n" +
	"- id: hotfix\n  input: the hotfix\n  assert:\n    - contains: hotfix\n" +
	"```\n"

// TestCompareTwoModels: two models on one endpoint, each its own
// invocation and journal, one failing one example: the table, the JSON
// document and the exit code say so, and each model got exactly its
// examples.
func TestCompareTwoModels(t *testing.T) {
	ep := newModelEndpoint(t, false, func(model, input string) string {
		if model == "careless" && input == "this week" {
			return "Notes: " + input
		}
		return "Release notes: " + input
	})
	file := writeAgent(t, compareAgent)
	h := home(t)
	args := []string{"test", file, "--endpoint", ep.base(), "--model", "careful", "--model", "careless", "--concurrency", "3"}

	r := kmx(t, h, args...)
	if r.code != ExitFailure {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"on 2 models (local preview)",
		"EXAMPLE  careful (compatible)  careless (compatible)",
		"2 examples × 2 models: 3 pass, 1 fail, 0 unknown",
		"local preview: verdict fail",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the table does not say %q:\n%s", want, r.stdout)
		}
	}
	if !rowSays(r.stdout, "weekly", "PASS", "FAIL") || !rowSays(r.stdout, "hotfix", "PASS", "PASS") {
		t.Errorf("rows:\n%s", r.stdout)
	}
	if got := ep.count(); got["careful"] != 2 || got["careless"] != 2 || len(got) != 2 {
		t.Errorf("requests per model %v, want 2 each", got)
	}

	j := kmx(t, h, append(args, "--json")...)
	if j.code != ExitFailure {
		t.Fatalf("--json exit %d", j.code)
	}
	var doc compare.Result
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, j.stdout)
	}
	if doc.Schema != "kmx.test.compare/v1" || doc.Verdict != "fail" || len(doc.Columns) != 2 || len(doc.Rows) != 2 {
		t.Fatalf("document %+v", doc)
	}
	if doc.Columns[0].Model.Model != "careful" || doc.Columns[1].Model.Model != "careless" || doc.Columns[0].RunID == doc.Columns[1].RunID || doc.Columns[0].RunID == "" {
		t.Errorf("columns %+v: want one run per model", doc.Columns)
	}
	if doc.Rows[0].ID != "weekly" || doc.Rows[0].Cells[0].Verdict != "pass" || doc.Rows[0].Cells[1].Verdict != "fail" {
		t.Errorf("weekly %+v", doc.Rows[0])
	}
	// Every existing guarantee holds per model: each run is a journal of
	// its own that verifies.
	for _, c := range doc.Columns {
		jr, err := journal.Open(context.Background(), filepath.Join(h, "local-preview", "journals"), c.RunID)
		if err != nil {
			t.Fatalf("open %s: %v", c.RunID, err)
		}
		if err := jr.Verify(context.Background()); err != nil {
			t.Errorf("journal of %s: %v", c.Model.Model, err)
		}
		jr.Close()
	}

	junit := filepath.Join(t.TempDir(), "out.xml")
	if r := kmx(t, h, append(args, "--junit", junit)...); r.code != ExitFailure {
		t.Fatalf("--junit exit %d", r.code)
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(raw, &suites); err != nil {
		t.Fatal(err)
	}
	if len(suites.Suites) != 2 || !strings.HasSuffix(suites.Suites[1].Name, "[careless (compatible)]") || suites.Suites[1].Failures != 1 || suites.Suites[0].Failures != 0 {
		t.Errorf("JUnit: want a testsuite per model, the second with one failure:\n%s", raw)
	}
}

// TestCompareCellsShowReportedTokens: a model whose endpoint reports
// usage has its tokens in each cell of the table and the JSON; one that
// reports none has none (never a guess).
func TestCompareCellsShowReportedTokens(t *testing.T) {
	ep := newModelEndpoint(t, false, func(model, input string) string { return "Release notes: " + input })
	ep.usage = func(model string) map[string]any {
		if model != "metered" {
			return nil
		}
		return map[string]any{"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}
	}
	file := writeAgent(t, compareAgent)
	h := home(t)
	args := []string{"test", file, "--endpoint", ep.base(), "--model", "metered", "--model", "silent"}
	r := kmx(t, h, args...)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "weekly" || f[0] == "hotfix") && strings.Count(line, "· 42 tokens") != 1 {
			t.Errorf("row %q: want the metered cell's 42 tokens and none for the silent one\n%s", line, r.stdout)
		}
	}
	j := kmx(t, h, append(args, "--json")...)
	var doc compare.Result
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, j.stdout)
	}
	for _, row := range doc.Rows {
		if c := row.Cells[0]; c.Tokens == nil || *c.Tokens != 42 {
			t.Errorf("%s on metered: tokens %v, want 42", row.ID, c.Tokens)
		}
		if c := row.Cells[1]; c.Tokens != nil {
			t.Errorf("%s on silent: tokens %d, want none (unreported)", row.ID, *c.Tokens)
		}
	}
}

// TestCompareFakeBesideAnEndpointModel: the docs' first comparison,
// --model fake --model NAME --endpoint URL, runs the fake column in
// memory (nothing of it reaches the endpoint) beside the endpoint's
// model, instead of refusing the fake column; a single fake model with an
// endpoint is still refused.
func TestCompareFakeBesideAnEndpointModel(t *testing.T) {
	ep := newModelEndpoint(t, false, func(model, input string) string { return "Release notes: " + input })
	_, file, _, _ := gitAgentRepo(t)
	h := home(t)
	r := kmx(t, h, "test", file, "--model", "fake", "--model", "careful", "--endpoint", ep.base())
	if r.code != ExitFailure || !strings.Contains(r.stdout, "EXAMPLE  fake (fake)") || !strings.Contains(r.stdout, "careful (compatible)") || strings.Contains(r.stdout, "REFUSED") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !rowSays(r.stdout, "weekly", "FAIL", "PASS") {
		t.Errorf("rows:\n%s", r.stdout)
	}
	if got := ep.count(); len(got) != 1 || got["careful"] != 2 {
		t.Errorf("requests per model %v: want careful's 2 and none of fake", got)
	}
	if r := kmx(t, h, "test", file, "--model", "fake", "--endpoint", ep.base()); r.code != ExitRefusal || !strings.Contains(r.stderr, "cannot be combined with an endpoint") {
		t.Errorf("one fake model with an endpoint: exit %d %s", r.code, r.stderr)
	}
}

// TestRegradeRefusesABaselineRun: --from on a comparison's baseline run is
// refused saying what that run is (another revision's instructions), not
// that it recorded no verdicts; the current column's run re-grades.
func TestRegradeRefusesABaselineRun(t *testing.T) {
	_, file, passing, _ := gitAgentRepo(t)
	h := home(t)
	j := kmx(t, h, "test", file, "--baseline", passing, "--json")
	var doc compare.Result
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil || len(doc.Columns) != 2 {
		t.Fatalf("%v\n%s\n%s", err, j.stdout, j.stderr)
	}
	base, current := doc.Columns[1], doc.Columns[0]
	if base.Side != compare.SideBaseline || current.Side != compare.SideCurrent {
		t.Fatalf("columns %+v", doc.Columns)
	}
	r := kmx(t, h, "test", file, "--from", base.RunID)
	if r.code != ExitRefusal || !strings.Contains(r.stderr, "is a comparison's baseline: it answered with the instructions at "+passing) ||
		strings.Contains(r.stderr, "recorded no verdicts") || !strings.Contains(r.stderr, "the comparison's current column is one") {
		t.Errorf("--from the baseline: exit %d\n%s", r.code, r.stderr)
	}
	if r := kmx(t, h, "test", file, "--from", current.RunID); r.code != ExitFailure || !strings.Contains(r.stdout, "re-grade of run "+current.RunID) {
		t.Errorf("--from the current column: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// kmx journal list names the baseline run as one, not as an out-of-date
	// run of an earlier revision.
	l := kmx(t, h, "journal", "list", "--file", file)
	for _, line := range strings.Split(l.stdout, "\n") {
		if strings.HasPrefix(line, base.RunID) && (!strings.Contains(line, "baseline notes (baseline)") || strings.Contains(line, "earlier revision")) {
			t.Errorf("the baseline run is listed as %q", line)
		}
	}
}

// rowSays reports whether the table row of id has the verdicts in order.
func rowSays(out, id string, verdicts ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != id {
			continue
		}
		k := 0
		for _, w := range f[1:] {
			if k < len(verdicts) && w == verdicts[k] {
				k++
			}
		}
		return k == len(verdicts)
	}
	return false
}

// gitAgentRepo is a git repository whose agent file passed its example at
// one commit and failed it at the next (on the fake model).
func gitAgentRepo(t *testing.T) (dir, file, passing, failing string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("this test needs git on PATH: %v", err)
	}
	dir = t.TempDir()
	gitHome := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+gitHome, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	file = filepath.Join(dir, "notes.agent.md")
	git("commit", "-q", "--allow-empty", "-m", "before the agent")
	writeFile(t, file, agentSaying("Release notes:"))
	git("add", ".")
	git("commit", "-q", "-m", "passing")
	passing = git("rev-parse", "HEAD")
	writeFile(t, file, agentSaying("Notes:"))
	git("commit", "-q", "-am", "failing")
	failing = git("rev-parse", "HEAD")
	return dir, file, passing, failing
}

func agentSaying(prefix string) string {
	return "---\nmodel: fake\n---\nReply with exactly `" + prefix + "` followed by the input\n\n## Examples\n\n```yaml\n" +
		"- id: weekly\n  input: this week\n  assert:\n    - contains: \"Release notes:\"\n" +
		"- id: steady\n  input: hotfix\n  assert:\n    - contains: hotfix\n" +
		"```\n"
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCompareBaseline: against a revision where the example passed, the
// current failing file regressed; the passing file against a revision
// where it failed improved. The baseline runs the current examples on the
// old instructions, journaled with its revision.
func TestCompareBaseline(t *testing.T) {
	_, file, passing, failing := gitAgentRepo(t)
	h := home(t)

	// The work tree holds the failing text (the last commit).
	r := kmx(t, h, "test", file, "--baseline", passing[:10], "--json")
	if r.code != ExitFailure {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var doc compare.Result
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Changes == nil || *doc.Changes != (compare.Changes{Regressed: 1, Unchanged: 1}) {
		t.Fatalf("changes %+v\n%s", doc.Changes, r.stdout)
	}
	if ch := doc.Rows[0].Changes[0]; doc.Rows[0].ID != "weekly" || ch.Change != compare.Regressed || ch.From != "pass" || ch.To != "fail" {
		t.Errorf("weekly %+v", doc.Rows[0])
	}
	base := doc.Columns[1]
	if base.Side != compare.SideBaseline || base.Baseline.Commit != passing || base.Baseline.Rev != passing[:10] || base.Baseline.Path != "notes.agent.md" {
		t.Errorf("baseline column %+v %+v", base, base.Baseline)
	}
	// Journaled like any run: the old instructions in its turns, the
	// revision in its result, the command saying what it was.
	started, result, meta := readRun(t, h, base.RunID)
	if meta.Command != "baseline" {
		t.Errorf("the baseline was journaled as %q", meta.Command)
	}
	if len(started) != 2 || !strings.Contains(started[0].Instructions, "`Release notes:`") {
		t.Errorf("baseline turns sent %+v", started)
	}
	if result.Baseline == nil || result.Baseline.Commit != passing || result.Baseline.Rev != passing[:10] {
		t.Errorf("run.result baseline %+v", result.Baseline)
	}
	cur, _, curMeta := readRun(t, h, doc.Columns[0].RunID)
	if curMeta.Command != "test" || !strings.Contains(cur[0].Instructions, "`Notes:`") || curMeta.AgentRevision == meta.AgentRevision {
		t.Errorf("current run: %q %q, revisions %s %s", curMeta.Command, cur[0].Instructions, curMeta.AgentRevision, meta.AgentRevision)
	}

	// Now the work tree passes, against the failing commit: improved.
	writeFile(t, file, agentSaying("Release notes:"))
	r = kmx(t, h, "test", file, "--baseline", failing)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !rowSays(r.stdout, "weekly", "PASS", "FAIL", "improved") || !rowSays(r.stdout, "steady", "PASS", "PASS", "unchanged") ||
		!strings.Contains(r.stdout, "against the baseline: 0 regressed, 1 improved, 1 unchanged") {
		t.Errorf("table:\n%s", r.stdout)
	}

	// --baseline none: the examples on empty instructions.
	r = kmx(t, h, "test", file, "--baseline", "none", "--format", "markdown")
	if r.code != ExitOK || !strings.Contains(r.stdout, "against baseline none: **0 regressed**, 2 improved") {
		t.Errorf("none: exit %d\n%s", r.code, r.stdout)
	}
}

// readRun returns a run's agent turns as started, its result and meta.
func readRun(t *testing.T, h, runID string) ([]journal.TurnStarted, journal.RunResult, journal.RunMeta) {
	t.Helper()
	ctx := context.Background()
	j, err := journal.Open(ctx, filepath.Join(h, "local-preview", "journals"), runID)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var started []journal.TurnStarted
	sessions, err := j.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(sessions, journal.RunSession) {
		recs, err := j.Records(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			switch rec.Kind {
			case journal.KindTurnStarted:
				var ts journal.TurnStarted
				if err := journal.Decode(rec.Payload, &ts); err != nil {
					t.Fatal(err)
				}
				started = append(started, ts)
			case journal.KindRunResult:
				var res journal.RunResult
				if err := journal.Decode(rec.Payload, &res); err != nil {
					t.Fatal(err)
				}
				return started, res, j.Meta()
			}
		}
	}
	t.Fatalf("run %s has no result", runID)
	return nil, journal.RunResult{}, journal.RunMeta{}
}

// TestCompareBaselineRefusals: outside a git work tree, an unknown
// revision and a file absent at the revision are refused (exit 2) with a
// message that says what to change, before a journal is created or a
// request sent.
func TestCompareBaselineRefusals(t *testing.T) {
	ep := newModelEndpoint(t, false, func(_, input string) string { return "Release notes: " + input })
	outside := writeAgent(t, compareAgent)
	_, file, _, _ := gitAgentRepo(t)
	for _, c := range []struct {
		name, file, rev, want string
	}{
		{"outside git", outside, "HEAD", "is not inside a git work tree"},
		{"unknown revision", file, "no-such-tag", "git knows no commit no-such-tag"},
		{"absent at the revision", file, "HEAD~2", "notes.agent.md did not exist at HEAD~2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := home(t)
			r := kmx(t, h, "test", c.file, "--baseline", c.rev, "--endpoint", ep.base(), "--model", "m", "--model", "n")
			if r.code != ExitRefusal || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "next: ") {
				t.Fatalf("exit %d, stderr %q, want %q", r.code, r.stderr, c.want)
			}
			if r.stdout != "" {
				t.Errorf("a refusal printed %q", r.stdout)
			}
			if entries, _ := os.ReadDir(h); len(entries) != 0 {
				t.Errorf("a refusal created %d entries in KMX_HOME", len(entries))
			}
			if n := ep.count(); len(n) != 0 {
				t.Errorf("a refusal sent %v", n)
			}
		})
	}
	h := home(t)
	checkCLI(t, h, []string{"test"}, []cliCase{
		{"a comparison of a folder", []string{filepath.Dir(file), "--baseline", "HEAD"}, ExitRefusal, "", "takes one agent file"},
		{"a comparison with --from", []string{file, "--model", "fake", "--model", "x", "--from", "20261201T000000.000000000Z-00000000"}, ExitRefusal, "", "--from re-grades one run"},
		{"--json with --format markdown", []string{file, "--json", "--format", "markdown"}, ExitRefusal, "", "ask for two different outputs"},
		{"a model named twice", []string{file, "--model", "fake", "--model", "fake"}, ExitRefusal, "", "named twice"},
	})
	if entries, _ := os.ReadDir(h); len(entries) != 0 {
		t.Errorf("the usage errors created %d entries in KMX_HOME", len(entries))
	}
}

// TestCompareCanary: with a credential in the endpoint's variable and an
// answer nobody could guess, neither appears in the table, the JSON, the
// Markdown summary or the JUnit file of a comparison; the credential did
// reach the endpoint (so the canary was live).
func TestCompareCanary(t *testing.T) {
	const credential = "canary-credential-7f3a9c2e51d8"
	const answer = "Release notes: zebra-quartz-answer-0b7e"
	ep := newModelEndpoint(t, true, func(model, input string) string {
		if model == "b" {
			return "zebra-quartz-answer-0b7e"
		}
		return answer
	})
	pool := x509.NewCertPool()
	pool.AddCert(ep.srv.Certificate())
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	file := writeAgent(t, compareAgent)
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	h := home(t)
	junit := filepath.Join(t.TempDir(), "out.xml")
	for _, format := range []string{"text", "json", "markdown"} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			switch k {
			case "KMX_HOME":
				return h
			case "CANARY_KEY":
				return credential
			}
			return ""
		}}
		tf := testFlags{rf: routeFlags{model: "b", models: []string{"a", "b"}, endpoint: ep.base(), keyEnv: "CANARY_KEY"}, client: client}
		tf.asJSON = format == "json"
		tf.markdown = format == "markdown"
		err := runCompare(context.Background(), env, tf, file, src, junit)
		if exitCode(err) != ExitFailure {
			t.Fatalf("%s: %v (exit %d)\n%s%s", format, err, exitCode(err), out.String(), errb.String())
		}
		raw, _ := os.ReadFile(junit)
		for _, s := range []string{out.String(), errb.String(), string(raw)} {
			if strings.Contains(s, credential) || strings.Contains(s, "zebra-quartz") {
				t.Errorf("%s: the output holds the credential or the answer:\n%s", format, s)
			}
		}
		if format == "markdown" && (!strings.Contains(out.String(), "`weekly` on b (compatible)") || !strings.Contains(out.String(), "`hotfix` on b (compatible)")) {
			t.Errorf("the summary does not name the failing examples:\n%s", out.String())
		}
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if len(ep.auth) == 0 || ep.auth[0] != "Bearer "+credential {
		t.Fatalf("the credential never reached the endpoint: %q", ep.auth)
	}
}

// TestJournalDiffOfAComparison: kmx journal diff RUN on one run of a
// comparison finds its other runs and shows the answers side by side with
// their verdicts and line diff, offline; a run of no comparison is
// refused.
func TestJournalDiffOfAComparison(t *testing.T) {
	_, file, passing, _ := gitAgentRepo(t)
	h := home(t)
	r := kmx(t, h, "test", file, "--baseline", passing, "--model", "fake", "--json")
	var doc compare.Result
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	for _, run := range []string{doc.Columns[0].RunID, doc.Columns[1].RunID} {
		d := kmx(t, h, "journal", "diff", run)
		if d.code != ExitFailure {
			t.Fatalf("exit %d\n%s\n%s", d.code, d.stdout, d.stderr)
		}
		for _, want := range []string{
			"of 2 runs retained",
			"A  " + doc.Columns[0].RunID + " · test of notes",
			"B  " + doc.Columns[1].RunID + " · baseline of notes · finished",
			"instructions at " + passing,
			"CHANGED  weekly",
			"- Notes: this week",
			"+ Release notes: this week",
			"live calls: 0",
		} {
			if !strings.Contains(d.stdout, want) {
				t.Errorf("journal diff %s does not say %q:\n%s", run, want, d.stdout)
			}
		}
	}
	j := kmx(t, h, "journal", "diff", doc.Columns[1].RunID, "--json")
	var cd struct {
		Schema    string   `json:"schema"`
		LiveCalls int      `json:"liveCalls"`
		Runs      []string `json:"runs"`
		Diffs     []struct {
			B struct {
				Baseline *journal.ResultBaseline `json:"baseline"`
			} `json:"b"`
		} `json:"diffs"`
		Grid *readback.ComparisonGrid `json:"grid"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &cd); err != nil {
		t.Fatalf("%v\n%s", err, j.stdout)
	}
	if cd.Schema != "kmx.journal.comparison/v2" || cd.LiveCalls != 0 || len(cd.Runs) != 2 || len(cd.Diffs) != 1 || cd.Diffs[0].B.Baseline == nil || cd.Diffs[0].B.Baseline.Commit != passing {
		t.Errorf("JSON %s", j.stdout)
	}
	// The grid the compare view renders: current × baseline, the baseline's
	// column naming its commit, weekly's verdicts and answers differing.
	if g := cd.Grid; g == nil || len(g.Columns) != 2 || g.Columns[0].Baseline != nil || g.Columns[1].Baseline == nil || g.Columns[1].Baseline.Commit != passing ||
		g.Columns[0].RunID != doc.Columns[0].RunID || g.Columns[0].Model.Model != "fake" {
		t.Errorf("grid columns %+v", cd.Grid)
	} else {
		var weekly *readback.ComparisonRow
		for i := range g.Rows {
			if g.Rows[i].ID == "weekly" {
				weekly = &g.Rows[i]
			}
		}
		if weekly == nil || !weekly.Differs || !weekly.AnswersDiffer || weekly.Cells[0].Verdict == weekly.Cells[1].Verdict || len(weekly.Cells[1].Lines) == 0 {
			t.Errorf("weekly row %+v", weekly)
		}
	}
	plain := kmx(t, h, "test", file, "--json")
	var rep struct {
		RunID string `json:"runId"`
	}
	if err := json.Unmarshal([]byte(plain.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if d := kmx(t, h, "journal", "diff", rep.RunID); d.code != ExitRefusal || !strings.Contains(d.stderr, "is not part of a comparison") {
		t.Errorf("a plain run: exit %d, %q", d.code, d.stderr)
	}
}
