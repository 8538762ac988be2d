//go:build unix

package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// slowEndpoint is a local OpenAI-compatible endpoint that records every
// request and answers "one" to the first, holds the second until the test
// ends (a turn in flight), and answers "three" after that.
type slowEndpoint struct {
	mu       sync.Mutex
	requests []chatBody
	holding  chan struct{}
	release  chan struct{}
}

type chatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func (e *slowEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b chatBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.requests = append(e.requests, b)
	n := len(e.requests)
	e.mu.Unlock()
	answer := "three"
	switch n {
	case 1:
		answer = "one"
	case 2:
		close(e.holding)
		select {
		case <-e.release:
		case <-r.Context().Done():
		}
		return
	}
	reply, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": b.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": answer}}},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(reply)
}

func (e *slowEndpoint) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.requests)
}

// TestChatKilledMidTurnRefusesUntilDiscarded (invariants 1 and 3, end to
// end): while a turn runs, another kmx chat process is refused as busy
// (and reading the history shows the turn pending). A
// real kmx chat process killed with SIGKILL while its turn waits on a slow
// local endpoint leaves a turn with no recorded outcome. The next turn is
// refused (exit 2) before anything is sent, until --discard-unfinished
// records the discard; the turn after that carries the earlier answered
// turn as history and never the interrupted input.
func TestChatKilledMidTurnRefusesUntilDiscarded(t *testing.T) {
	bin := testutil.KMX(t)
	ep := &slowEndpoint{holding: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(ep)
	defer srv.Close()
	defer close(ep.release)
	h := home(t)
	file := writeAgent(t, "---\nname: Talker\n---\nYou answer briefly.\n")
	base := []string{"chat", file, "--model", "m1", "--endpoint", srv.URL + "/v1"}
	run := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(bin, append(append([]string{}, base...), args...)...)
		cmd.Env = append(os.Environ(), "KMX_HOME="+h)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{code, out.String(), errb.String()}
	}

	wantExit(t, run("--input", "first"), ExitOK, "agent: one")

	cmd := exec.Command(bin, append(append([]string{}, base...), "--input", "lost")...)
	cmd.Env = append(os.Environ(), "KMX_HOME="+h)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-ep.holding: // the turn's request is in flight
	case err := <-exited:
		t.Fatalf("kmx chat ended before its request reached the endpoint: %v", err)
	}
	// Invariant 1 across processes: while that turn runs, another kmx chat
	// process is refused before it sends anything.
	held := ep.count()
	wantExit(t, run("--input", "meanwhile"), ExitRefusal, "is busy")
	// Reading the history is not a turn: it is answered from a snapshot,
	// the running turn shown as pending, without waiting for the turn.
	wantExit(t, run("--history"), ExitOK, "── turn 1 ── answered", "agent: one", "── turn 2 ── pending", "you:   lost", "turn 2 is running now")
	if ep.count() != held {
		t.Fatal("a turn refused as busy reached the endpoint")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited

	sent := ep.count()
	r := run("--input", "next")
	wantExit(t, r, ExitRefusal, "turn 2 has no recorded outcome", "--discard-unfinished")
	if ep.count() != sent {
		t.Fatal("the refused turn reached the endpoint")
	}
	wantExit(t, run("--history"), ExitOK, "── turn 2 ── unfinished", "you:   lost", "--discard-unfinished")

	wantExit(t, run("--discard-unfinished"), ExitOK, "── turn 2 ── discarded")
	wantExit(t, run("--input", "again"), ExitOK, "── turn 3 ── answered", "agent: three")
	if ep.count() != sent+1 {
		t.Fatalf("the endpoint got %d requests after the discard; want 1", ep.count()-sent)
	}
	last := ep.requests[len(ep.requests)-1]
	var got []string
	for _, m := range last.Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	want := "system:You answer briefly.|user:first|assistant:one|user:again"
	if strings.Join(got, "|") != want {
		t.Fatalf("turn 3 was sent with %q; want %q (history without the discarded turn)", strings.Join(got, "|"), want)
	}
	wantExit(t, run("--history"), ExitOK, "3 turns, 0 model calls", "── turn 2 ── discarded")
}
