package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestPoolIsSharedBetweenInvocations: two invocations (two models, as a
// comparison runs them) on one Pool of 2 slots. While the first model's
// two requests are held at the endpoint, the second model sends nothing;
// once they are answered it runs, and no more than 2 requests are ever in
// flight. With a pool each, the second model would send at once.
func TestPoolIsSharedBetweenInvocations(t *testing.T) {
	var mu sync.Mutex
	live, most := 0, 0
	sent := map[string]int{}
	release := make(chan struct{})
	bothHeld := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		live++
		most = max(most, live)
		sent[req.Model]++
		if req.Model == "first" && sent["first"] == 2 {
			close(bothHeld)
		}
		mu.Unlock()
		if req.Model == "first" {
			<-release
		}
		mu.Lock()
		live--
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(okBody(req.Model, "Answer: ok")))
	}))
	defer srv.Close()
	src := "---\nname: pooled\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n" +
		"- id: a\n  input: one\n  assert:\n    - contains: Answer\n" +
		"- id: b\n  input: two\n  assert:\n    - contains: Answer\n" +
		"```\n"
	pool := NewPool(2)
	dir := testutil.PrivateDir(t)
	run := func(model string) (*Report, error) {
		return Test(context.Background(), Options{Options: invocation.Options{Model: model, Endpoint: srv.URL + "/v1", StateDir: dir, Concurrency: 2}, Pool: pool}, agentRequest(t, src))
	}
	var wg sync.WaitGroup
	reps := make([]*Report, 2)
	errs := make([]error, 2)
	wg.Go(func() { reps[0], errs[0] = run("first") })
	select {
	case <-bothHeld:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the first model's two requests never were in flight together")
	}
	wg.Go(func() { reps[1], errs[1] = run("second") })
	// Once the second invocation's journal exists, all that stands
	// between it and its sends is a slot; give it a moment to try.
	deadline := time.Now().Add(30 * time.Second)
	for {
		dbs, _ := filepath.Glob(filepath.Join(dir, "local-preview", "journals", "*.db"))
		if len(dbs) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	early := sent["second"]
	mu.Unlock()
	close(release)
	wg.Wait()
	if early != 0 {
		t.Errorf("the second model sent %d requests while the first held every slot of the shared pool", early)
	}
	for i, rep := range reps {
		if errs[i] != nil || rep.Verdict != VerdictPass {
			t.Fatalf("invocation %d: %v, verdict %v", i, errs[i], rep)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 2 || sent["first"] != 2 || sent["second"] != 2 {
		t.Errorf("at most %d in flight (want 2), sent %v", most, sent)
	}
}
