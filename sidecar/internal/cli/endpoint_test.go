package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// kmxEnv runs one command line in-process with KMX_HOME set to home and the
// given extra environment variables.
func kmxEnv(t *testing.T, home string, vars map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "KMX_HOME" {
			return home
		}
		return vars[k]
	}}
	code := Main(context.Background(), args, env)
	return result{code, out.String(), errb.String()}
}

// TestRouteFlagRefusals: route flags that are empty, pasted credentials or
// inconsistent are refused with exit 2 before anything is created or sent,
// and the refusal never repeats a pasted value.
func TestRouteFlagRefusals(t *testing.T) {
	pasted := "gh" + "p_" + strings.Repeat("Q7r6", 9)
	file := writeAgent(t, "Reply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - contains: ok\n```\n")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"empty --key-env", []string{"test", file, "--model", "fake", "--key-env", ""}, "the credential variable name is empty"},
		{"empty --key-env=", []string{"test", file, "--model", "fake", "--key-env="}, "the credential variable name is empty"},
		{"empty --judge-key-env on run", []string{"run", file, "--model", "fake", "--judge-key-env", ""}, "the judge credential variable name is empty"},
		{"empty --endpoint", []string{"test", file, "--model", "m", "--endpoint", ""}, "the endpoint URL is empty"},
		{"empty --judge-endpoint", []string{"test", file, "--model", "fake", "--judge-endpoint="}, "the judge endpoint URL is empty"},
		{"pasted credential as --key-env", []string{"test", file, "--model", "m", "--endpoint", "https://127.0.0.1:9/v1", "--key-env", pasted}, "looks like a credential value"},
		{"invalid --key-env without endpoint", []string{"test", file, "--model", "fake", "--key-env", "MY-KEY"}, "not a valid environment variable name"},
		{"--key-env without --endpoint", []string{"test", file, "--model", "fake", "--key-env", "OPENAI_API_KEY"}, "no --endpoint is given"},
		{"localhost over http", []string{"test", file, "--model", "m", "--endpoint", "http://localhost:9/v1"}, "literal address"},
		{"credential over http", []string{"test", file, "--model", "m", "--endpoint", "http://127.0.0.1:9/v1", "--key-env", "K"}, "only over https"},
		{"fake with endpoint", []string{"test", file, "--model", "fake", "--endpoint", "http://127.0.0.1:9/v1"}, "cannot be combined with an endpoint"},
		{"judge endpoint without llmJudge", []string{"test", file, "--model", "fake", "--judge-endpoint", "http://127.0.0.1:9/v1"}, "no selected example has an llmJudge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := home(t)
			r := kmxEnv(t, h, map[string]string{"K": "some-value"}, tc.args...)
			if r.code != ExitRefusal {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, ExitRefusal, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", r.stderr, tc.want)
			}
			if strings.Contains(r.stdout+r.stderr, "Q7r6") || strings.Contains(r.stdout+r.stderr, "some-value") {
				t.Errorf("the output repeats a credential value")
			}
			if entries, _ := os.ReadDir(h); len(entries) != 0 {
				t.Errorf("a refusal created %d entries in KMX_HOME", len(entries))
			}
		})
	}
}

// TestKmxTestAgainstThirdPartyServer runs kmx test through the CLI against
// an OpenAI-compatible server nobody on this project wrote, installed by
// name from the npm registry and started on 127.0.0.1. The server echoes
// the input, so verdicts are decided by the assertions. Its judge answers
// are not judge replies (it answers the judge payload with a 500, since it
// pastes input into JSON unescaped), so llmJudge is unknown and later
// sends are aborted, never a pass.
func TestKmxTestAgainstThirdPartyServer(t *testing.T) {
	endpoint := testutil.MockOpenAI(t) + "/v1"
	file := writeAgent(t, "---\nname: mock-e2e\n---\nReply with the input.\n\n## Examples\n\n```yaml\n"+
		"- id: greets\n  input: hello there\n  assert:\n    - contains: hello there\n"+
		"- id: misses\n  input: good morning\n  assert:\n    - contains: good night\n"+
		"- id: judged\n  input: a haiku please\n  assert:\n    - llmJudge:\n        rubric: The answer is a haiku\n"+
		"- id: after\n  input: not sent\n  assert:\n    - contains: not sent\n"+
		"```\n")
	const model = "kmx-mock-model"
	cases := []struct {
		name     string
		args     []string
		code     int
		verdicts map[string]string
	}{
		{"one passing example", []string{"--example", "greets"}, ExitOK, map[string]string{"greets": "pass"}},
		{"pass, fail, unknown judge, not sent", nil, ExitFailure, map[string]string{"greets": "pass", "misses": "fail", "judged": "unknown", "after": "unknown"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := home(t)
			// One at a time: the test checks that nothing after the
			// unavailable judge is sent.
			args := append([]string{"test", file, "--endpoint", endpoint, "--model", model, "--json", "--concurrency", "1"}, tc.args...)
			r := kmxEnv(t, h, nil, args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			var rep runner.Report
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("report: %v\n%s", err, r.stdout)
			}
			if rep.Route.Agent != (runner.Identity{Route: "compatible", Model: model}) || rep.Label != runner.Label {
				t.Errorf("route %+v label %q", rep.Route.Agent, rep.Label)
			}
			if len(rep.Examples) != len(tc.verdicts) {
				t.Fatalf("%d examples, want %d", len(rep.Examples), len(tc.verdicts))
			}
			for _, ex := range rep.Examples {
				if ex.Verdict != tc.verdicts[ex.ID] {
					t.Errorf("example %s: %q (%s), want %q", ex.ID, ex.Verdict, ex.Message, tc.verdicts[ex.ID])
				}
				if ex.ID == "greets" && (!ex.Journaled || !ex.Verified) {
					t.Errorf("the passing example was not journaled and replay-verified")
				}
				if ex.ID == "judged" && (len(ex.Assertions) != 1 || !ex.Assertions[0].Abort) {
					t.Errorf("judged example assertions %+v: want one aborted llmJudge", ex.Assertions)
				}
				if ex.ID == "after" && !strings.Contains(ex.Message, "not sent") {
					t.Errorf("the example after an unavailable judge was sent: %q", ex.Message)
				}
			}
		})
	}
}
