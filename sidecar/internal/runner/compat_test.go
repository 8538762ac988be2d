package runner

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
)

// chatCall is one request the scripted endpoint received, decoded.
type chatCall struct {
	Path, Auth, Model, System, User string
	Stream                          bool
}

// chatReply is what the scripted endpoint answers: status 0 means 200.
type chatReply struct {
	status   int
	body     string
	location string
}

// chatServer is a real OpenAI-compatible endpoint on 127.0.0.1 (plain HTTP
// or TLS with a certificate the test trusts explicitly) whose answers a test
// scripts per request. It records every request it receives.
type chatServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []chatCall
}

func newChatServer(t testing.TB, useTLS bool, answer func(chatCall) chatReply) *chatServer {
	t.Helper()
	s := &chatServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		c := chatCall{Path: r.URL.Path, Auth: r.Header.Get("Authorization")}
		if err := json.Unmarshal(raw, &req); err == nil {
			c.Model, c.Stream = req.Model, req.Stream
			for _, m := range req.Messages {
				switch m.Role {
				case "system":
					c.System = m.Content
				case "user":
					c.User = m.Content
				}
			}
		}
		s.mu.Lock()
		s.calls = append(s.calls, c)
		s.mu.Unlock()
		rep := answer(c)
		if rep.location != "" {
			w.Header().Set("Location", rep.location)
		}
		w.Header().Set("Content-Type", "application/json")
		if rep.status == 0 {
			rep.status = http.StatusOK
		}
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.body)
	})
	if useTLS {
		s.srv = httptest.NewTLSServer(h)
	} else {
		s.srv = httptest.NewServer(h)
	}
	t.Cleanup(s.srv.Close)
	return s
}

// base is the endpoint a user would pass: the server's URL plus /v1.
func (s *chatServer) base() string { return s.srv.URL + "/v1" }

// client trusts exactly this server's certificate, through an explicit root
// pool; nil for a plain HTTP server.
func (s *chatServer) client() *http.Client {
	if s.srv.TLS == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

func (s *chatServer) received() []chatCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]chatCall(nil), s.calls...)
}

// okBody is a well-formed Chat Completions reply.
func okBody(model, text string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text}}},
	})
	return string(b)
}

// judgeBody is a well-formed reply whose answer is a judge reply.
func judgeBody(model string, score *int, reasoning string) string {
	text, _ := json.Marshal(map[string]any{"score": score, "reasoning": reasoning})
	return okBody(model, string(text))
}

func intp(n int) *int { return &n }

// echo answers "Answer: " + the input, naming the requested model.
func echo(c chatCall) chatReply { return chatReply{body: okBody(c.Model, "Answer: "+c.User)} }

// testCredential is a bearer credential made at run time: random, and not
// credential-shaped, so the agent-file parser accepts it and only the
// runner's exact-value check can refuse content that holds it.
func testCredential(t testing.TB) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "kmxcred" + hex.EncodeToString(b)
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

const compatAgentModel = "kmx-agent-model"

// compatAgent is an agent file on a real model name with three examples:
// alpha passes on an echo, beta fails, gamma passes.
const compatAgent = "---\nname: compat-agent\nmodel: " + compatAgentModel + "\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
	"- id: alpha\n  input: first question\n  assert:\n    - contains: first\n" +
	"- id: beta\n  input: second question\n  assert:\n    - contains: nowhere-in-the-answer\n" +
	"- id: gamma\n  input: third question\n  assert:\n    - regex: \"^Answer: third\"\n" +
	"```\n"

// allRecords returns every session's records of a finished run.
func allRecords(t *testing.T, home, runID string) [][]journal.Record {
	t.Helper()
	return readJournal(t, home, runID)
}

// TestCompatibleTestOneRequestPerExample runs Test through the runner and
// the real Sessions service against a scripted endpoint, over plain HTTP at
// 127.0.0.1 and over TLS with a credential: verdicts come from the answers,
// each example sends exactly one request carrying the instructions and its
// input, and every turn is journaled and replay-verified.
func TestCompatibleTestOneRequestPerExample(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    bool
		keyEnv string
	}{
		{"plain http at 127.0.0.1, keyless", false, ""},
		{"https with a credential", true, "KMX_TEST_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newChatServer(t, tc.tls, echo)
			key := testCredential(t)
			home := testutil.PrivateDir(t)
			opts := Options{Options: invocation.Options{Concurrency: 1, StateDir: home, Endpoint: srv.base(), KeyEnv: tc.keyEnv, HTTPClient: srv.client(), Getenv: envOf(map[string]string{"KMX_TEST_KEY": key})}}
			rep, err := Test(context.Background(), opts, agentRequest(t, compatAgent))
			if err != nil {
				t.Fatalf("Test: %v", err)
			}
			want := []string{VerdictPass, VerdictFail, VerdictPass}
			for i, ex := range rep.Examples {
				if ex.Verdict != want[i] || !ex.Journaled || !ex.Verified {
					t.Errorf("example %s: verdict %q journaled %v verified %v (%s)", ex.ID, ex.Verdict, ex.Journaled, ex.Verified, ex.Message)
				}
			}
			if rep.Verdict != VerdictFail || rep.Route.Agent != (Identity{Route: "compatible", Model: compatAgentModel}) {
				t.Errorf("file verdict %q route %+v", rep.Verdict, rep.Route.Agent)
			}
			if rep.Retention == nil || rep.Retention.Status != "retained" {
				t.Errorf("retention %+v, want retained for a failing Test", rep.Retention)
			}
			calls := srv.received()
			if len(calls) != 3 {
				t.Fatalf("the endpoint received %d requests, want exactly one per example (3)", len(calls))
			}
			inputs := []string{"first question", "second question", "third question"}
			for i, c := range calls {
				wantAuth := ""
				if tc.keyEnv != "" {
					wantAuth = "Bearer " + key
				}
				if c.Path != "/v1/chat/completions" || c.Model != compatAgentModel || c.System != "You answer briefly." || c.User != inputs[i] || c.Stream || c.Auth != wantAuth {
					t.Errorf("request %d = path %q model %q system %q user %q stream %v, auth as configured %v", i, c.Path, c.Model, c.System, c.User, c.Stream, c.Auth == wantAuth)
				}
			}
			sessions := allRecords(t, home, rep.RunID)
			if len(sessions) != 3 {
				t.Fatalf("journal has %d sessions, want 3", len(sessions))
			}
			for _, recs := range sessions {
				if len(recs) != len(journal.TurnKinds) {
					t.Errorf("a session has %d records, want %d", len(recs), len(journal.TurnKinds))
				}
			}
		})
	}
}

// TestCompatibleRunShowsTheAnswer: Run of ad-hoc input on a real route
// shows the endpoint's answer.
func TestCompatibleRunShowsTheAnswer(t *testing.T) {
	srv := newChatServer(t, false, echo)
	input := "a question typed by hand"
	req := agentRequest(t, compatAgent)
	req.Input = &input
	rep, err := Run(context.Background(), Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Endpoint: srv.base()}}, req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictAnswered || rep.Examples[0].Answer == nil || *rep.Examples[0].Answer != "Answer: "+input {
		t.Fatalf("run = verdict %q examples %+v", rep.Verdict, rep.Examples)
	}
	if n := len(srv.received()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// replyFile is one reply of the route package's corpus.
type replyFile struct {
	name   string
	body   []byte
	status int
	ok     bool
}

// corpusModel is the model name every corpus reply is written for.
const corpusModel = "kmx-test-model"

func loadCorpus(t *testing.T) []replyFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "route", "testdata", "replies", "*.json"))
	if err != nil || len(paths) < 40 {
		t.Fatalf("reply corpus: %d files, %v; want at least 40", len(paths), err)
	}
	var out []replyFile
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		prefix, _, _ := strings.Cut(name, "--")
		f := replyFile{name: name, body: body, status: http.StatusOK, ok: prefix == "ok"}
		if code, found := strings.CutPrefix(prefix, "status-"); found {
			if f.status, err = strconv.Atoi(code); err != nil {
				t.Fatalf("%s: bad status", p)
			}
		}
		out = append(out, f)
	}
	return out
}

// windows returns the distinct n-byte substrings of s.
func windows(s string, n int) map[string]bool {
	out := map[string]bool{}
	for i := 0; i+n <= len(s); i++ {
		out[s[i:i+n]] = true
	}
	return out
}

// leakedFrom reports a text that contains any 10-byte run of body that is
// not also in one of the strings kmx itself sent or says (allowed): no error
// text, report field or journal value may carry a piece of a refused body.
func leakedFrom(body string, texts, allowed []string) (string, bool) {
	for w := range windows(body, 10) {
		legit := false
		for _, a := range allowed {
			if strings.Contains(a, w) {
				legit = true
				break
			}
		}
		if legit {
			continue
		}
		for _, t := range texts {
			if strings.Contains(t, w) {
				return w, true
			}
		}
	}
	return "", false
}

// journalTexts decodes every record of a run and returns its string values:
// the places a body could land.
func journalTexts(t *testing.T, home, runID string) (texts []string, completions int) {
	t.Helper()
	for _, recs := range allRecords(t, home, runID) {
		for _, r := range recs {
			switch r.Kind {
			case journal.KindModelCompletion:
				var c journal.ModelCompletion
				if err := journal.Decode(r.Payload, &c); err != nil {
					t.Fatal(err)
				}
				completions++
				texts = append(texts, c.Model, c.Text, c.FinishReason)
			case journal.KindTurnTerminal:
				var term journal.TurnTerminal
				if err := journal.Decode(r.Payload, &term); err != nil {
					t.Fatal(err)
				}
				texts = append(texts, term.Answer, term.Error)
			}
		}
	}
	return texts, completions
}

// reportTexts returns every string a report shows.
func reportTexts(rep *Report) []string {
	var out []string
	if rep.Refusal != nil {
		out = append(out, rep.Refusal.Message, rep.Refusal.Next)
	}
	for _, ex := range rep.Examples {
		out = append(out, ex.Message)
		if ex.Answer != nil {
			out = append(out, *ex.Answer)
		}
		for _, a := range ex.Assertions {
			out = append(out, a.Message, a.Actual, a.Expected)
		}
	}
	return out
}

// TestCompatibleReplyCorpusThroughRunner serves every reply of the route
// corpus (well-formed ones and every refusal class, in several spellings) as
// the answer to the first of two examples. A well-formed reply passes; a
// refused one leaves that example unknown with nothing judged, the second
// example is not sent, and no piece of the refused body reaches the
// journal, the report or the error text.
func TestCompatibleReplyCorpusThroughRunner(t *testing.T) {
	const agent = "---\nname: corpus\nmodel: " + corpusModel + "\n---\nSay something.\n\n## Examples\n\n```yaml\n" +
		"- id: first\n  input: hello\n  assert:\n    - regex: \"\\\\S\"\n" +
		"- id: second\n  input: again\n  assert:\n    - regex: \"\\\\S\"\n```\n"
	corpus := loadCorpus(t)
	refused := 0
	for _, f := range corpus {
		t.Run(f.name, func(t *testing.T) {
			var hits atomic.Int32
			srv := newChatServer(t, false, func(c chatCall) chatReply {
				if hits.Add(1) == 1 {
					return chatReply{status: f.status, body: string(f.body)}
				}
				return chatReply{body: okBody(c.Model, "second answer")}
			})
			home := testutil.PrivateDir(t)
			rep, err := Test(context.Background(), Options{Options: invocation.Options{Concurrency: 1, StateDir: home, Endpoint: srv.base()}}, agentRequest(t, agent))
			if err != nil {
				t.Fatalf("Test: %v", err)
			}
			first, second := rep.Examples[0], rep.Examples[1]
			if f.ok {
				if first.Verdict != VerdictPass || second.Verdict != VerdictPass || hits.Load() != 2 {
					t.Fatalf("well-formed reply: verdicts %q/%q (%s), hits %d", first.Verdict, second.Verdict, first.Message, hits.Load())
				}
				return
			}
			if first.Verdict != VerdictUnknown || len(first.Assertions) != 0 || first.Verified {
				t.Errorf("refused reply: first example %q verified %v assertions %d (%s)", first.Verdict, first.Verified, len(first.Assertions), first.Message)
			}
			if second.Verdict != VerdictUnknown || !strings.Contains(second.Message, "not sent") {
				t.Errorf("second example %q (%s), want unknown and not sent", second.Verdict, second.Message)
			}
			if n := hits.Load(); n != 1 {
				t.Errorf("the endpoint was hit %d times, want 1 (no retry, no later send)", n)
			}
			if rep.Verdict == VerdictPass {
				t.Errorf("file verdict pass after a refused reply")
			}
			jt, completions := journalTexts(t, home, rep.RunID)
			if completions != 0 {
				t.Errorf("the journal holds %d completions; a refused reply must not be journaled", completions)
			}
			// kmx's own class texts name the finish_reason values they refuse.
			allowed := []string{corpusModel, " " + strconv.Quote(corpusModel), "Say something.", "hello", "again", http.StatusText(f.status), "finish_reason content_filter length"}
			texts := append(jt, reportTexts(rep)...)
			// The one thing a refusal may name from a reply: the model it
			// named (an identity, not content), so the user can pass the
			// right --model. Nothing else of the body may reach a text.
			var env map[string]json.RawMessage
			var named string
			if json.Unmarshal(f.body, &env) == nil && json.Unmarshal(env["model"], &named) == nil && named != "" && named != corpusModel {
				for i := range texts {
					texts[i] = strings.ReplaceAll(texts[i], strconv.Quote(named), `"MODEL"`)
				}
			}
			if w, leaked := leakedFrom(string(f.body), texts, allowed); leaked {
				t.Errorf("a piece of the refused body (%q) reached the journal or the report", w)
			}
		})
		if !f.ok {
			refused++
		}
	}
	if refused < 30 {
		t.Errorf("only %d refused shapes in the corpus", refused)
	}
}

// TestCompatibleRefusedBodiesLeaveNoTrace serves marked refusals (the marker
// in the body), including an endpoint echoing the credential and a
// redirect, over TLS with a credential; then every byte of every file in
// the state folder, and the report, is searched for the marker and the
// credential.
func TestCompatibleRefusedBodiesLeaveNoTrace(t *testing.T) {
	const marker = "LEAKMARK7Q"
	key := testCredential(t)
	cases := []struct {
		name  string
		reply func(c chatCall) chatReply
	}{
		{"status 500 with a body", func(chatCall) chatReply { return chatReply{status: 500, body: `{"error":"` + marker + `"}`} }},
		{"status 401 echoing the header", func(c chatCall) chatReply { return chatReply{status: 401, body: marker + c.Auth} }},
		{"credential in the answer", func(c chatCall) chatReply {
			return chatReply{body: okBody(c.Model, marker+" your key is "+strings.TrimPrefix(c.Auth, "Bearer "))}
		}},
		{"credential json-escaped in a discarded field", func(c chatCall) chatReply {
			esc := strings.ReplaceAll(strings.TrimPrefix(c.Auth, "Bearer "), "k", `\u006b`)
			return chatReply{body: strings.TrimSuffix(okBody(c.Model, marker), "}") + `,"debug":"` + esc + `"}`}
		}},
		{"tool call", func(c chatCall) chatReply {
			return chatReply{body: `{"model":"` + c.Model + `","choices":[{"message":{"role":"assistant","content":"` + marker + `","tool_calls":[{"id":"x"}]},"finish_reason":"stop"}]}`}
		}},
		{"duplicate key alias", func(c chatCall) chatReply {
			return chatReply{body: `{"model":"` + c.Model + `","choices":[{"message":{"role":"assistant","content":"` + marker + `","Content":"x"},"finish_reason":"stop"}]}`}
		}},
		// A plain model name is shown (an identity); this one is not plain, so it is not.
		{"different model", func(chatCall) chatReply { return chatReply{body: okBody("other; "+marker, "fine")} }},
		{"cut by length", func(c chatCall) chatReply {
			return chatReply{body: `{"model":"` + c.Model + `","choices":[{"message":{"role":"assistant","content":"` + marker + `"},"finish_reason":"length"}]}`}
		}},
		{"refusal", func(c chatCall) chatReply {
			return chatReply{body: `{"model":"` + c.Model + `","choices":[{"message":{"role":"assistant","content":"x","refusal":"` + marker + `"},"finish_reason":"stop"}]}`}
		}},
		{"truncated json", func(c chatCall) chatReply { return chatReply{body: okBody(c.Model, marker)[:60]} }},
		{"status 200 with an error object beside the answer", func(c chatCall) chatReply {
			return chatReply{body: strings.TrimSuffix(okBody(c.Model, marker), "}") + `,"error":{"message":"` + marker + `"}}`}
		}},
		{"status 200 with only an error object", func(chatCall) chatReply {
			return chatReply{body: `{"error":{"message":"` + marker + `","type":"server_error"}}`}
		}},
		{"redirect", func(chatCall) chatReply {
			return chatReply{status: 302, location: "/elsewhere/" + marker, body: marker}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newChatServer(t, true, tc.reply)
			home := testutil.PrivateDir(t)
			opts := Options{Options: invocation.Options{Concurrency: 1, StateDir: home, Endpoint: srv.base(), KeyEnv: "KMX_TEST_KEY", HTTPClient: srv.client(), Getenv: envOf(map[string]string{"KMX_TEST_KEY": key})}}
			rep, err := Test(context.Background(), opts, agentRequest(t, compatAgent))
			if err != nil {
				t.Fatalf("Test: %v", err)
			}
			for _, ex := range rep.Examples {
				if ex.Verdict != VerdictUnknown {
					t.Errorf("example %s: %q, want unknown", ex.ID, ex.Verdict)
				}
			}
			calls := srv.received()
			if len(calls) != 1 || calls[0].Path != "/v1/chat/completions" {
				t.Fatalf("the endpoint saw %d requests (%+v), want 1 and no redirect followed", len(calls), calls)
			}
			report, _ := json.Marshal(rep)
			for _, needle := range []string{marker, key} {
				if strings.Contains(string(report), needle) {
					t.Errorf("the report holds %s", map[bool]string{true: "the marker", false: "the credential"}[needle == marker])
				}
				if path, found := fileHolding(t, home, needle); found {
					t.Errorf("%s holds %s", path, map[bool]string{true: "the marker", false: "the credential"}[needle == marker])
				}
			}
		})
	}
}

// fileHolding walks root and reports the first file whose bytes contain
// needle.
func fileHolding(t *testing.T, root, needle string) (string, bool) {
	t.Helper()
	var hit string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || hit != "" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), needle) {
			hit = p
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return hit, hit != ""
}

// judgedAgent has one llmJudge example (judged by judgeModel, or the agent's
// model when judgeModel is "") followed by one text example, so a test can
// see whether the judge aborted later sends.
func judgedAgent(judgeModel string) string {
	jm := ""
	if judgeModel != "" {
		jm = "\n        judgeModel: " + judgeModel
	}
	return "---\nname: judged\nmodel: " + compatAgentModel + "\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
		"- id: judged\n  input: write a haiku\n  assert:\n    - llmJudge:\n        rubric: The answer is a haiku" + jm + "\n" +
		"- id: after\n  input: later question\n  assert:\n    - contains: later\n```\n"
}

// TestCompatibleJudgeOnRealRoute runs llmJudge on the compatible route: two
// samples, each its own journaled Session naming the judge model, with the
// fixed judge instructions. Split and inconclusive judgments are unknown
// and the run goes on; a malformed or unavailable reply is unknown and
// aborts later sends. Reasoning is journaled but never in the report.
func TestCompatibleJudgeOnRealRoute(t *testing.T) {
	const reasoning = "REASONINGMARK the judge thought hard"
	cases := []struct {
		name        string
		samples     []chatReply // the judge's replies, in order
		want        string      // the judged example's verdict
		wantAbort   bool
		judgeCalls  int
		wantReasons int // completions holding the reasoning
	}{
		{"both pass", []chatReply{{body: judgeBody("judge-m", intp(90), reasoning)}, {body: judgeBody("judge-m", intp(75), reasoning)}}, VerdictPass, false, 2, 2},
		{"both fail", []chatReply{{body: judgeBody("judge-m", intp(10), reasoning)}, {body: judgeBody("judge-m", intp(20), reasoning)}}, VerdictFail, false, 2, 2},
		{"split", []chatReply{{body: judgeBody("judge-m", intp(90), reasoning)}, {body: judgeBody("judge-m", intp(10), reasoning)}}, VerdictUnknown, false, 2, 2},
		{"inconclusive", []chatReply{{body: judgeBody("judge-m", nil, reasoning)}, {body: judgeBody("judge-m", intp(90), reasoning)}}, VerdictUnknown, false, 2, 2},
		{"malformed first sample", []chatReply{{body: okBody("judge-m", "I think it is great, 95/100. "+reasoning)}}, VerdictUnknown, true, 1, 1},
		{"duplicate score key", []chatReply{{body: okBody("judge-m", `{"score": 90, "score": 10, "reasoning": "x"}`)}}, VerdictUnknown, true, 1, 0},
		{"unavailable second sample", []chatReply{{body: judgeBody("judge-m", intp(90), reasoning)}, {status: 503, body: "busy"}}, VerdictUnknown, true, 2, 1},
		{"refused first sample (wrong model)", []chatReply{{body: judgeBody("someone-else", intp(90), reasoning)}}, VerdictUnknown, true, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var judgeN atomic.Int32
			srv := newChatServer(t, false, func(c chatCall) chatReply {
				if c.Model == "judge-m" {
					i := int(judgeN.Add(1)) - 1
					if i < len(tc.samples) {
						return tc.samples[i]
					}
					return chatReply{status: 500, body: "unexpected extra judge sample"}
				}
				return echo(c)
			})
			home := testutil.PrivateDir(t)
			rep, err := Test(context.Background(), Options{Options: invocation.Options{Concurrency: 1, StateDir: home, Endpoint: srv.base()}}, agentRequest(t, judgedAgent("judge-m")))
			if err != nil {
				t.Fatalf("Test: %v", err)
			}
			judged, after := rep.Examples[0], rep.Examples[1]
			if judged.Verdict != tc.want {
				t.Errorf("judged example %q (%s), want %q", judged.Verdict, judged.Message, tc.want)
			}
			if got := strings.Contains(after.Message, "not sent"); got != tc.wantAbort {
				t.Errorf("later example %q (%s): aborted %v, want %v", after.Verdict, after.Message, got, tc.wantAbort)
			}
			if !tc.wantAbort && after.Verdict != VerdictPass {
				t.Errorf("later example %q, want pass", after.Verdict)
			}
			var agentCalls, judgeCalls int
			for _, c := range srv.received() {
				if c.Model != "judge-m" {
					agentCalls++
					continue
				}
				judgeCalls++
				if c.System != judge.Instructions || !strings.Contains(c.User, `"answer":"Answer: write a haiku"`) || !strings.Contains(c.User, `"rubric":"The answer is a haiku"`) {
					t.Errorf("judge request: system is the judge instructions %v, user %q", c.System == judge.Instructions, c.User)
				}
			}
			wantAgent := 2
			if tc.wantAbort {
				wantAgent = 1
			}
			if judgeCalls != tc.judgeCalls || agentCalls != wantAgent {
				t.Errorf("requests: %d judge, %d agent; want %d and %d", judgeCalls, agentCalls, tc.judgeCalls, wantAgent)
			}
			if rep.Route.Judge == nil || *rep.Route.Judge != (Identity{Route: "compatible", Model: "judge-m"}) {
				t.Errorf("report judge route %+v", rep.Route.Judge)
			}
			report, _ := json.Marshal(rep)
			if strings.Contains(string(report), "REASONINGMARK") {
				t.Errorf("the report shows the judge's reasoning")
			}
			// The journal keeps each judge sample in its own judge Session,
			// reasoning included.
			var judgeSessions, reasons int
			for _, recs := range allRecords(t, home, rep.RunID) {
				var placed journal.SessionPlaced
				if err := journal.Decode(recs[0].Payload, &placed); err != nil {
					t.Fatal(err)
				}
				if placed.Purpose != invocation.PurposeJudge {
					continue
				}
				judgeSessions++
				if placed.Model != (journal.ModelIdentity{Route: "compatible", Model: "judge-m"}) || placed.ExampleID != "judged" {
					t.Errorf("judge session placed as %+v for %q", placed.Model, placed.ExampleID)
				}
				for _, r := range recs {
					if r.Kind == journal.KindModelCompletion && strings.Contains(string(r.Payload), "REASONINGMARK") {
						reasons++
					}
				}
			}
			if judgeSessions != tc.judgeCalls || reasons != tc.wantReasons {
				t.Errorf("journal: %d judge sessions, %d with reasoning; want %d and %d", judgeSessions, reasons, tc.judgeCalls, tc.wantReasons)
			}
		})
	}
}

// TestCompatibleJudgeDefaultsToTheAgentModel: an llmJudge with no
// judgeModel asks the agent's endpoint for the agent's model.
func TestCompatibleJudgeDefaultsToTheAgentModel(t *testing.T) {
	srv := newChatServer(t, false, func(c chatCall) chatReply {
		if c.System == judge.Instructions {
			return chatReply{body: judgeBody(c.Model, intp(100), "fine")}
		}
		return echo(c)
	})
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Endpoint: srv.base()}}, agentRequest(t, judgedAgent("")))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictPass {
		t.Fatalf("verdict %q: %+v", rep.Verdict, rep.Examples)
	}
	calls := srv.received()
	if len(calls) != 4 {
		t.Fatalf("%d requests, want 4 (2 agent, 2 judge)", len(calls))
	}
	for _, c := range calls {
		if c.Model != compatAgentModel {
			t.Errorf("a request named %q, want the agent's model", c.Model)
		}
	}
}

// TestCompatibleJudgeEndpointIsSeparate: with --judge-endpoint, judge samples
// go only there, with the judge's own credential; the agent's endpoint sees
// only agent requests. Each credential variable is read once.
func TestCompatibleJudgeEndpointIsSeparate(t *testing.T) {
	agentKey, judgeKey := testCredential(t), testCredential(t)
	agentSrv := newChatServer(t, true, echo)
	judgeSrv := newChatServer(t, true, func(c chatCall) chatReply { return chatReply{body: judgeBody(c.Model, intp(80), "ok")} })
	// One client trusting both test servers.
	pool := x509.NewCertPool()
	pool.AddCert(agentSrv.srv.Certificate())
	pool.AddCert(judgeSrv.srv.Certificate())
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	var mu sync.Mutex
	reads := map[string]int{}
	getenv := func(k string) string {
		mu.Lock()
		reads[k]++
		mu.Unlock()
		return map[string]string{"AGENT_KEY": agentKey, "JUDGE_KEY": judgeKey}[k]
	}
	body := strings.Replace(judgedAgent("judge-m"), "- id: after\n  input: later question\n  assert:\n    - contains: later\n",
		"- id: after\n  input: later question\n  assert:\n    - contains: later\n    - llmJudge:\n        rubric: Mentions `later`\n", 1)
	opts := Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Endpoint: agentSrv.base(), KeyEnv: "AGENT_KEY", JudgeEndpoint: judgeSrv.base(), JudgeKeyEnv: "JUDGE_KEY", HTTPClient: client, Getenv: getenv}}
	rep, err := Test(context.Background(), opts, agentRequest(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictPass {
		t.Fatalf("verdict %q: %+v", rep.Verdict, rep.Examples)
	}
	for _, c := range agentSrv.received() {
		if c.Model != compatAgentModel || c.System == judge.Instructions || c.Auth != "Bearer "+agentKey {
			t.Errorf("the agent endpoint got a request for %q (judge instructions %v, agent credential %v)", c.Model, c.System == judge.Instructions, c.Auth == "Bearer "+agentKey)
		}
	}
	models := map[string]int{}
	for _, c := range judgeSrv.received() {
		models[c.Model]++
		if c.System != judge.Instructions || c.Auth != "Bearer "+judgeKey {
			t.Errorf("the judge endpoint got a non-judge request or the wrong credential")
		}
	}
	// judge-m for the first example; the agent's model (the default judge
	// model) for the second, both on the judge endpoint.
	if len(agentSrv.received()) != 2 || models["judge-m"] != 2 || models[compatAgentModel] != 2 {
		t.Errorf("agent endpoint %d requests; judge endpoint models %v", len(agentSrv.received()), models)
	}
	if reads["AGENT_KEY"] != 1 || reads["JUDGE_KEY"] != 1 {
		t.Errorf("credential variables read %v times, want each once", reads)
	}
}

// TestCompatibleCredentialReadOncePerInvocation: the agent's model and two
// judge models on one endpoint share one read of the key variable.
func TestCompatibleCredentialReadOncePerInvocation(t *testing.T) {
	key := testCredential(t)
	srv := newChatServer(t, true, func(c chatCall) chatReply {
		if c.System == judge.Instructions {
			return chatReply{body: judgeBody(c.Model, intp(100), "fine")}
		}
		return echo(c)
	})
	var reads atomic.Int32
	getenv := func(k string) string {
		if k == "KMX_TEST_KEY" {
			reads.Add(1)
			return key
		}
		return ""
	}
	body := strings.Replace(judgedAgent("judge-m"), "    - contains: later\n", "    - contains: later\n    - llmJudge:\n        rubric: Mentions `later`\n", 1)
	rep, err := Test(context.Background(), Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Endpoint: srv.base(), KeyEnv: "KMX_TEST_KEY", HTTPClient: srv.client(), Getenv: getenv}}, agentRequest(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictPass || len(srv.received()) != 6 {
		t.Fatalf("verdict %q with %d requests, want pass with 6", rep.Verdict, len(srv.received()))
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("the key variable was read %d times, want once per invocation", n)
	}
}

// TestCompatibleRefusalsBeforeAnything: every route refusal, and every
// piece of content holding the resolved credential, is refused before a
// journal exists or a request is sent, and no refusal repeats the
// credential.
func TestCompatibleRefusalsBeforeAnything(t *testing.T) {
	key, judgeKey := testCredential(t), testCredential(t)
	pasted := "gh" + "p_" + strings.Repeat("Z9y8", 9)
	srv := newChatServer(t, true, echo)
	ep := srv.base()
	env := envOf(map[string]string{"K": key, "JK": judgeKey})
	withCred := func(s string) string { return strings.Replace(compatAgent, "You answer briefly.", s, 1) }
	adHoc := "please use " + key
	cases := []struct {
		name  string
		body  string
		opts  Options
		input *string
		model string
		want  string
	}{
		{name: "invalid key variable name without endpoint", body: compatAgent, opts: Options{Options: invocation.Options{Model: "fake", KeyEnv: "A-B"}}, want: "--key-env: the credential variable name is not a valid"},
		{name: "pasted credential as key variable", body: compatAgent, opts: Options{Options: invocation.Options{Model: "fake", KeyEnv: pasted}}, want: "looks like a credential value"},
		{name: "invalid judge key variable name", body: compatAgent, opts: Options{Options: invocation.Options{Endpoint: ep, JudgeKeyEnv: "$X"}}, want: "--judge-key-env"},
		{name: "key variable without endpoint", body: compatAgent, opts: Options{Options: invocation.Options{Model: "fake", KeyEnv: "K"}}, want: "no --endpoint is given"},
		{name: "judge key variable without judge endpoint", body: judgedAgent("judge-m"), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K", JudgeKeyEnv: "JK"}}, want: "no --judge-endpoint is given"},
		{name: "credential over plain http", body: compatAgent, opts: Options{Options: invocation.Options{Endpoint: "http://127.0.0.1:9/v1", KeyEnv: "K"}}, want: "only over https"},
		{name: "localhost over plain http", body: compatAgent, opts: Options{Options: invocation.Options{Endpoint: "http://localhost:9/v1"}}, want: "literal address"},
		{name: "userinfo in endpoint", body: compatAgent, opts: Options{Options: invocation.Options{Endpoint: "https://user:pw@127.0.0.1:9/v1"}}, want: "user information"},
		{name: "bad judge endpoint", body: judgedAgent("judge-m"), opts: Options{Options: invocation.Options{Endpoint: ep, JudgeEndpoint: "ftp://127.0.0.1/v1"}}, want: "--judge-endpoint"},
		{name: "unset key variable", body: compatAgent, opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "UNSET_VAR"}}, want: "UNSET_VAR is not set"},
		{name: "fake with endpoint", body: compatAgent, opts: Options{Options: invocation.Options{Model: "fake", Endpoint: ep}}, want: "cannot be combined with an endpoint"},
		{name: "judge endpoint without llmJudge", body: compatAgent, opts: Options{Options: invocation.Options{Endpoint: ep, JudgeEndpoint: ep}}, want: "no selected example has an llmJudge"},
		{name: "llmJudge with no judge route", body: judgedAgent("judge-m"), opts: Options{Options: invocation.Options{Model: "fake"}}, want: "llmJudge needs a judge"},
		{name: "credential in instructions", body: withCred("Say " + key), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K"}}, want: "the instructions contain"},
		{name: "judge credential in instructions", body: strings.Replace(judgedAgent("judge-m"), "You answer briefly.", "Say "+judgeKey, 1), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K", JudgeEndpoint: ep, JudgeKeyEnv: "JK"}}, want: "the instructions contain"},
		{name: "credential in example id", body: strings.Replace(compatAgent, "id: beta", "id: beta-"+key, 1), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K"}}, want: "the id of an example contains"},
		{name: "credential in example input", body: strings.Replace(compatAgent, "second question", "second "+key, 1), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K"}}, want: `the input of example "beta" contains`},
		{name: "credential in a turn's input", body: strings.Replace(compatAgent, "  input: second question\n  assert:\n    - contains: nowhere-in-the-answer\n", "  turns:\n    - input: first\n    - input: second "+key+"\n", 1), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K"}}, want: `the input of turn 2 of example "beta" contains`},
		{name: "credential in ad-hoc input", body: compatAgent, opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K"}}, input: &adHoc, want: "the ad-hoc input contains"},
		{name: "credential in agent name", body: strings.Replace(compatAgent, "name: compat-agent", "name: a-"+key, 1), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K"}}, want: "the agent name contains"},
		{name: "credential in model name", body: compatAgent, opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K", Model: "m-" + key}}, want: "model name contains the endpoint credential"},
		{name: "credential in assertion operand", body: strings.Replace(compatAgent, "nowhere-in-the-answer", key, 1), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K"}}, want: `assertion 1 of example "beta" contains`},
		{name: "credential in rubric", body: strings.Replace(judgedAgent("judge-m"), "is a haiku", "is "+key, 1), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K"}}, want: `assertion 1 of example "judged" contains`},
		{name: "credential in judge model name", body: judgedAgent("j-" + key), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K"}}, want: "contains the endpoint credential"},
		{name: "judge credential in judge model name", body: judgedAgent("j-" + judgeKey), opts: Options{Options: invocation.Options{Endpoint: ep, KeyEnv: "K", JudgeEndpoint: ep, JudgeKeyEnv: "JK"}}, want: "contains the endpoint credential"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := testutil.PrivateDir(t)
			tc.opts.StateDir, tc.opts.Getenv, tc.opts.HTTPClient = home, env, srv.client()
			req := agentRequest(t, tc.body)
			req.Input = tc.input
			before := len(srv.received())
			rep, r := mustRefuse(t, tc.input != nil, tc.opts, req)
			if !strings.Contains(r.Msg, tc.want) || r.Next == "" {
				t.Errorf("refusal %q (next %q), want it to say %q", r.Msg, r.Next, tc.want)
			}
			report, _ := json.Marshal(rep)
			for _, secret := range []string{key, judgeKey, pasted} {
				if strings.Contains(r.Msg+r.Next+string(report), secret) {
					t.Errorf("the refusal or its report repeats a credential")
				}
			}
			if rep.Verdict != VerdictRefused || rep.RunID != "" {
				t.Errorf("report verdict %q run %q", rep.Verdict, rep.RunID)
			}
			if entries, _ := os.ReadDir(home); len(entries) != 0 {
				t.Errorf("a refusal created %d entries in the state folder", len(entries))
			}
			if n := len(srv.received()) - before; n != 0 {
				t.Errorf("a refusal sent %d requests", n)
			}
		})
	}
}
