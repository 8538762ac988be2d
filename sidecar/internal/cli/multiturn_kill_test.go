//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// TestKilledMultiTurnRunLeavesTurnIncomplete kills a real kmx test process
// with SIGKILL while turn 2 of a 3-turn example waits on a slow local
// endpoint (served in this process). Afterwards the run's journal opens
// and verifies; turn 1 is complete, turn 2 is placed and started but has
// neither a completion nor a terminal record (incomplete), turn 3 was
// never placed, and the run holds no result: nothing passes. kmx journal
// inspect says the same with zero model calls: the run crashed unfinished,
// turn 1 verified, turn 2 INCOMPLETE (its completion is missing).
func TestKilledMultiTurnRunLeavesTurnIncomplete(t *testing.T) {
	bin := kmxBinary(t)
	h := home(t)
	var (
		mu       sync.Mutex
		inputs   []string
		holdOnce sync.Once
	)
	holding := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b chatBody
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil || len(b.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		input := b.Messages[len(b.Messages)-1].Content
		mu.Lock()
		inputs = append(inputs, input)
		mu.Unlock()
		if input == "second" {
			// Turn 2 in flight: held until kmx goes away.
			holdOnce.Do(func() { close(holding) })
			<-r.Context().Done()
			return
		}
		reply, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": b.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "answer: " + input}}},
			"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
		})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	}))
	defer srv.Close()

	file := writeAgent(t, "---\nname: cut\n---\nYou answer briefly.\n\n## Examples\n\n```yaml\n"+
		"- id: cut\n  turns:\n"+
		"    - input: first\n      assert: [contains: first]\n"+
		"    - input: second\n      assert: [contains: second]\n"+
		"    - input: third\n      assert: [contains: third]\n"+
		"```\n")
	jdir, err := journal.EnsureDir(h)
	if err != nil {
		t.Fatal(err)
	}
	before := runIDs(t, jdir)
	cmd := kmxCmd(bin, h, "test", file, "--model", "m1", "--endpoint", srv.URL+"/v1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-holding:
	case err := <-exited:
		t.Fatalf("kmx test ended before turn 2 reached the endpoint: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("kmx test was not killed: %v", err)
	}
	mu.Lock()
	sent := strings.Join(inputs, ",")
	mu.Unlock()
	if sent != "first,second" {
		t.Fatalf("the endpoint got %q; want first,second (turn 3 never sent)", sent)
	}

	var run string
	for id := range runIDs(t, jdir) {
		if !before[id] {
			run = id
		}
	}
	if run == "" {
		t.Fatal("the killed run left no journal")
	}
	ctx := context.Background()
	j, err := journal.Open(ctx, jdir, run)
	if err != nil {
		t.Fatalf("the killed run's journal does not open: %v", err)
	}
	defer j.Close()
	if err := j.Verify(ctx); err != nil {
		t.Fatalf("the killed run's journal does not verify: %v", err)
	}
	if j.Status() == journal.StatusFinished {
		t.Fatal("the killed run says it finished")
	}
	recs, err := j.Records(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string][]journal.Kind{} // by example (turn) name
	names := map[string]string{}         // session ID -> turn name
	for _, r := range recs {
		if r.Kind == journal.KindRunResult {
			t.Fatalf("the killed run holds a result: %s", r.Payload)
		}
		if r.Kind == journal.KindSessionPlaced {
			var p journal.SessionPlaced
			if err := journal.Decode(r.Payload, &p); err != nil {
				t.Fatal(err)
			}
			names[r.SessionID] = p.ExampleID
		}
		if n, ok := names[r.SessionID]; ok {
			kinds[n] = append(kinds[n], r.Kind)
		}
	}
	has := func(name string, k journal.Kind) bool {
		for _, got := range kinds[name] {
			if got == k {
				return true
			}
		}
		return false
	}
	if !has("cut/turn:1", journal.KindModelCompletion) || !has("cut/turn:1", journal.KindTurnTerminal) {
		t.Fatalf("turn 1 is not complete: %v", kinds["cut/turn:1"])
	}
	if !has("cut/turn:2", journal.KindTurnStarted) || has("cut/turn:2", journal.KindModelCompletion) || has("cut/turn:2", journal.KindTurnTerminal) {
		t.Fatalf("turn 2 is not started-and-incomplete: %v", kinds["cut/turn:2"])
	}
	if _, placed := kinds["cut/turn:3"]; placed {
		t.Fatalf("turn 3 was placed: %v", kinds["cut/turn:3"])
	}
	j.Close()

	r := kmxEnv(t, h, nil, "journal", "inspect", run)
	wantExit(t, r, ExitOK, "crashed-unfinished",
		"[1] cut/turn:1 · agent · model m1 (compatible) · VERIFIED",
		"[2] cut/turn:2 · agent · model m1 (compatible) · INCOMPLETE\n    why: record missing: model.completion",
		"2 turns: 1 verified, 1 incomplete, 0 failed, 0 cancelled · 0 judge samples · 0 live model calls")
	if strings.Contains(r.stdout, "cut/turn:3") {
		t.Fatalf("inspect shows turn 3, which never ran:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(jdir, run+".db")); err != nil {
		t.Fatal(err)
	}
}
