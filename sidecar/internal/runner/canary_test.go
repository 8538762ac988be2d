package runner

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"

	"github.com/kmxdev/kmx/sidecar/internal/judge"
)

// kmxBinaryOnce builds the real kmx binary once per test process.
var kmxBinaryOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "kmx-canary-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kmx")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/kmxdev/kmx/sidecar/cmd/kmx").CombinedOutput()
	if err != nil {
		return "", errors.New("go build: " + err.Error() + "\n" + string(out))
	}
	return bin, nil
})

// canaryAgent runs the whole flow: a passing example, an llmJudge example
// (two judge samples on the same endpoint), a failing example (so Test
// retains a failure record) and, last, an example whose answer echoes the
// Authorization header (refused before it is journaled).
const canaryAgent = "---\nname: canary\nmodel: canary-agent-model\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
	"- id: passes\n  input: first question\n  assert:\n    - contains: first\n" +
	"- id: judged\n  input: write a haiku\n  assert:\n    - llmJudge:\n        rubric: The answer is a haiku\n        judgeModel: canary-judge-model\n" +
	"- id: fails\n  input: second question\n  assert:\n    - contains: absent-from-the-answer\n" +
	"- id: echoes\n  input: echo the header\n  assert:\n    - contains: anything\n" +
	"```\n"

// TestCanaryCredentialAppearsNowhere runs the real kmx binary over HTTPS
// (the test server's certificate trusted through SSL_CERT_FILE, as a user's
// system roots would trust a real endpoint) with a canary credential in the
// named variable, through test (JSON and JUnit), test (human output), run,
// and test explain. The canary must reach the server, and appear nowhere
// else: no file under KMX_HOME (journals with their -wal/-shm files,
// retained failures), no stdout, no stderr, no report, no JUnit file.
func TestCanaryCredentialAppearsNowhere(t *testing.T) {
	bin, err := kmxBinaryOnce()
	if err != nil {
		t.Fatalf("build kmx: %v", err)
	}
	canary := testCredential(t)
	var (
		mu        sync.Mutex
		badAuth   int
		judgeHits int
		// walSeen counts journal -wal files found while a run was still
		// open: the scan below then also covers a live WAL.
		walSeen   int
		liveLeaks []string
	)
	home := testutil.PrivateDir(t)
	srv := newChatServer(t, true, func(c chatCall) chatReply {
		mu.Lock()
		defer mu.Unlock()
		if c.Auth != "Bearer "+canary {
			badAuth++
			return chatReply{status: 401, body: "no"}
		}
		switch {
		case c.System == judge.Instructions:
			judgeHits++
			return chatReply{body: judgeBody(c.Model, intp(90), "a fine haiku")}
		case c.User == "echo the header":
			// The run is mid-flight: its journal and WAL are open.
			_ = filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				if strings.HasSuffix(p, "-wal") {
					walSeen++
				}
				if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(canary)) {
					liveLeaks = append(liveLeaks, p)
				}
				return nil
			})
			return chatReply{body: okBody(c.Model, "you sent "+c.Auth)}
		}
		return echo(c)
	})
	certFile := filepath.Join(t.TempDir(), "server.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(t.TempDir(), "canary.agent.md")
	if err := os.WriteFile(agent, []byte(canaryAgent), 0o600); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	env := append(os.Environ(), "KMX_HOME="+home, "SSL_CERT_FILE="+certFile, "KMX_CANARY_KEY="+canary)
	// One at a time: the refused echo would otherwise cancel the examples
	// running beside it, and this test checks each one's own verdict.
	route := []string{"--endpoint", srv.base(), "--key-env", "KMX_CANARY_KEY", "--concurrency", "1"}

	type outcome struct {
		name           string
		code           int
		stdout, stderr string
	}
	run := func(name string, args ...string) outcome {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return outcome{name, code, out.String(), errb.String()}
	}
	outs := []outcome{
		run("test --json --junit", append([]string{"test", agent, "--json", "--junit", junit}, route...)...),
		run("test (human)", append([]string{"test", agent}, route...)...),
		run("run --example passes", append([]string{"run", agent, "--example", "passes"}, route...)...),
		run("test explain", "test", "explain", "--file", agent),
		run("test explain --show-content --json", "test", "explain", "--file", agent, "--show-content", "--json"),
	}

	// The flow really ran: a failing verdict, a retained failure record, the
	// judge sampled twice per test, the echo refused, the canary sent.
	var rep Report
	if err := json.Unmarshal([]byte(outs[0].stdout), &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, outs[0].stdout)
	}
	verdicts := map[string]string{}
	for _, ex := range rep.Examples {
		verdicts[ex.ID] = ex.Verdict
	}
	want := map[string]string{"passes": VerdictPass, "judged": VerdictPass, "fails": VerdictFail, "echoes": VerdictUnknown}
	for id, v := range want {
		if verdicts[id] != v {
			t.Errorf("example %s: %q, want %q", id, verdicts[id], v)
		}
	}
	if outs[0].code != 1 || rep.Verdict != VerdictFail || rep.Retention == nil || rep.Retention.Status != "retained" {
		t.Errorf("test: exit %d verdict %q retention %+v", outs[0].code, rep.Verdict, rep.Retention)
	}
	if outs[2].code != 0 || !strings.Contains(outs[2].stdout, "Answer: first question") {
		t.Errorf("run: exit %d, stdout %q", outs[2].code, outs[2].stdout)
	}
	if outs[3].code != 0 && outs[3].code != 1 {
		t.Errorf("explain: exit %d, stderr %q", outs[3].code, outs[3].stderr)
	}
	mu.Lock()
	if badAuth != 0 || judgeHits != 4 {
		t.Errorf("server: %d requests without the canary, %d judge samples (want 0 and 4)", badAuth, judgeHits)
	}
	if walSeen == 0 || len(liveLeaks) != 0 {
		t.Errorf("while runs were open: %d -wal files seen (want some), canary in %v", walSeen, liveLeaks)
	}
	mu.Unlock()

	// Now the search: every surface a user or a later process can read.
	for _, o := range outs {
		for stream, text := range map[string]string{"stdout": o.stdout, "stderr": o.stderr} {
			if strings.Contains(text, canary) {
				t.Errorf("%s %s holds the canary", o.name, stream)
			}
		}
	}
	if b, err := os.ReadFile(junit); err != nil || len(b) == 0 || bytes.Contains(b, []byte(canary)) {
		t.Errorf("JUnit file: read err %v, %d bytes, holds canary %v", err, len(b), bytes.Contains(b, []byte(canary)))
	}
	var files []string
	err = filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the canary", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var journals, failures int
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, ".db"):
			journals++
		case strings.Contains(f, "fail"):
			failures++
		}
	}
	if journals < 3 || failures == 0 {
		t.Errorf("state folder holds %d journals and %d failure files (%v); the flow did not run as intended", journals, failures, files)
	}
}
