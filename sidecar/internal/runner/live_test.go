package runner

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestLiveCompatibleModel runs Run and Test against a real OpenAI-compatible
// model. It is opt-in: set KMX_LOCAL_PREVIEW_LIVE_BASE_URL (for example a
// local Ollama at http://127.0.0.1:11434/v1) and KMX_LOCAL_PREVIEW_LIVE_MODEL
// (an installed model); for an HTTPS endpoint that needs a credential, set
// KMX_LOCAL_PREVIEW_LIVE_KEY_ENV to the NAME of the variable holding it,
// never the value. See the README, "Real models".
//
// A real model's words are not predictable, so the test asserts what kmx
// guarantees: one journaled, replay-verified turn per example on the
// compatible route, and a Test verdict that is pass only when every
// assertion passed. The judge's verdict is logged, not asserted: a model
// that does not follow the judge format is unknown, never a pass.
func TestLiveCompatibleModel(t *testing.T) {
	base := os.Getenv("KMX_LOCAL_PREVIEW_LIVE_BASE_URL")
	model := os.Getenv("KMX_LOCAL_PREVIEW_LIVE_MODEL")
	if base == "" || model == "" {
		t.Skip("live test not configured: set KMX_LOCAL_PREVIEW_LIVE_BASE_URL (e.g. http://127.0.0.1:11434/v1) and KMX_LOCAL_PREVIEW_LIVE_MODEL (an installed model); optionally KMX_LOCAL_PREVIEW_LIVE_KEY_ENV=<variable name> for an HTTPS endpoint")
	}
	opts := Options{Options: invocation.Options{StateDir: testutil.PrivateDir(t), Getenv: os.Getenv, Model: model, Endpoint: base, KeyEnv: os.Getenv("KMX_LOCAL_PREVIEW_LIVE_KEY_ENV")}, ExampleDeadline: 2 * time.Minute}
	const agent = "---\nname: live\n---\nYou are a terse assistant. Answer in one short sentence.\n\n## Examples\n\n```yaml\n" +
		"- id: capital\n  input: What is the capital of France?\n  assert:\n    - regex: \"(?i)paris\"\n" +
		"- id: judged\n  input: Name one primary colour.\n  assert:\n    - regex: \"\\\\S\"\n    - llmJudge:\n        rubric: The answer names a colour.\n" +
		"```\n"
	ctx := context.Background()

	input := "Say hello in three words."
	req := agentRequest(t, agent)
	req.Input = &input
	run, err := Run(ctx, opts, req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	ex := run.Examples[0]
	if run.Verdict != VerdictAnswered || !ex.Journaled || !ex.Verified || ex.Answer == nil || *ex.Answer == "" {
		t.Fatalf("Run: verdict %q journaled %v verified %v (%s)", run.Verdict, ex.Journaled, ex.Verified, ex.Message)
	}
	if run.Route.Agent != (Identity{Route: "compatible", Model: model}) {
		t.Errorf("Run route %+v", run.Route.Agent)
	}
	t.Logf("Run answer (%.0f ms): %q", ex.DurationMs, *ex.Answer)

	rep, err := Test(ctx, opts, agentRequest(t, agent))
	if err != nil {
		t.Fatalf("Test: %v", err)
	}
	for _, ex := range rep.Examples {
		t.Logf("Test %s: %s (%s) in %.0f ms", ex.ID, ex.Verdict, ex.Message, ex.DurationMs)
		if !ex.Journaled || !ex.Verified {
			t.Errorf("example %s was not a journaled, replay-verified turn: %s", ex.ID, ex.Message)
		}
	}
	if rep.Examples[0].Verdict != VerdictPass {
		t.Errorf("the capital example is %q: a model that cannot name Paris, or a kmx bug; see the log", rep.Examples[0].Verdict)
	}
	t.Logf("Test verdict %s; journal %s", rep.Verdict, rep.JournalPath)
}
