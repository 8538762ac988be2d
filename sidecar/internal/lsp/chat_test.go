package lsp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/conversation"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

const talker = "---\nname: Talker\nmodel: fake\n---\nYou are a test agent.\nReply with the turn number\n"

func ptrStr(s string) *string { return &s }

// chat calls a chat method and decodes a fresh result.
func (c *client) chat(t *testing.T, method string, p lsp.ChatParams) lsp.ChatResult {
	t.Helper()
	var res lsp.ChatResult
	c.mustCall(method, p, &res)
	return res
}

// TestChatThroughTheServer: the Open chat lens names kmx.openChat; a turn
// is sent with the buffer's instructions and the history; a second server
// (a reloaded window) reads the history with zero model calls; refusals
// are results with a code and next step.
func TestChatThroughTheServer(t *testing.T) {
	path := writeAgent(t, "talker.agent.md", talker)
	home := privateHome(t)
	getenv := func(k string) string {
		if k == "KMX_HOME" {
			return home
		}
		return ""
	}
	c := startServer(t, lsp.Options{Getenv: getenv})
	c.initialize(nil)
	uri := fileURI(path)
	c.open(uri, 1, talker)

	lenses := c.lenses(uri)
	var open json.RawMessage
	for _, l := range lenses {
		if l.Command.Command == lsp.CommandOpenChat && l.Range.Start.Line == 0 && len(l.Command.Arguments) == 1 {
			open = l.Command.Arguments[0]
		}
	}
	if open == nil {
		t.Fatalf("no Open chat lens on the first line: %+v", lenses)
	}

	var res lsp.ChatResult
	c.mustCall(lsp.MethodChat, open, &res)
	if res.Chat == nil || len(res.Chat.Turns) != 0 || res.Refusal != nil || res.Chat.Label != "local preview" {
		t.Fatalf("empty conversation = %+v", res)
	}
	res = c.chat(t, lsp.MethodChat, lsp.ChatParams{URI: uri, Input: ptrStr("hello")})
	if res.Chat == nil || res.Chat.Turn == nil || res.Chat.Turn.Answer != "Turn 1: hello" {
		t.Fatalf("turn 1 = %+v", res)
	}
	// The buffer's text, not the file on disk, gives the instructions.
	edited := strings.Replace(talker, "Reply with the turn number", "Reply with exactly `edited`.", 1)
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 2},
		"contentChanges": []any{map[string]any{"text": edited}}})
	res = c.chat(t, lsp.MethodChat, lsp.ChatParams{URI: uri, Input: ptrStr("again")})
	if res.Chat.Turn == nil || res.Chat.Turn.Answer != "edited" || len(res.Chat.Turns) != 2 {
		t.Fatalf("turn 2 = %+v", res.Chat)
	}

	// A reloaded window: a new server reads the history from the journal.
	c2 := startServer(t, lsp.Options{Getenv: getenv})
	c2.initialize(nil)
	res = c2.chat(t, lsp.MethodChat, lsp.ChatParams{URI: uri})
	if res.Chat == nil || len(res.Chat.Turns) != 2 || res.Chat.ReplayLiveCalls != 0 || res.Chat.Turns[0].Answer != "Turn 1: hello" {
		t.Fatalf("history after reload = %+v", res.Chat)
	}
	res = c2.chat(t, lsp.MethodChat, lsp.ChatParams{URI: uri, Input: ptrStr("x"), Model: "other"})
	if res.Refusal == nil || res.Refusal.Code != conversation.CodeInvalid || res.Refusal.Next == "" {
		t.Fatalf("a model with no endpoint = %+v", res.Refusal)
	}
	res = c2.chat(t, lsp.MethodChatDiscard, lsp.ChatParams{URI: uri})
	if res.Refusal == nil || !strings.Contains(res.Refusal.Message, "no unfinished turn") {
		t.Fatalf("discard with nothing unfinished = %+v", res.Refusal)
	}
}

// slowEndpoint is a local OpenAI-compatible endpoint: a request whose last
// message is "slow" is held until its client goes away (or the test ends);
// any other is answered "fast". Each request is signalled on arrived.
func slowEndpoint(t *testing.T) (url string, arrived chan struct{}) {
	t.Helper()
	arrived = make(chan struct{}, 16)
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		arrived <- struct{}{}
		if last := body.Messages[len(body.Messages)-1].Content; last == "slow" {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "fast"}}}})
	}))
	t.Cleanup(func() {
		close(hold)
		srv.Close()
	})
	return srv.URL, arrived
}

// slowTalker starts a server whose model is served by slowEndpoint and
// returns it, the URI of a talker agent file and the endpoint's arrivals.
func slowTalker(t *testing.T) (*client, string, chan struct{}) {
	t.Helper()
	url, arrived := slowEndpoint(t)
	path := writeAgent(t, "talker.agent.md", "---\nname: Talker\n---\nYou answer.\n")
	c := startServer(t, lsp.Options{})
	c.initialize(map[string]any{"settings": map[string]any{"model": "m1", "endpoint": url + "/v1"}})
	return c, fileURI(path), arrived
}

// slowTurn sends the turn "slow", which the endpoint holds, and returns once
// it has arrived there: cancel sends $/cancelRequest for it, and done
// receives its end.
func slowTurn(t *testing.T, c *client, uri string, arrived chan struct{}) (cancel context.CancelFunc, done chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() {
		var res lsp.ChatResult
		done <- cancellableCall(ctx, c.conn, lsp.MethodChat, lsp.ChatParams{URI: uri, Input: ptrStr("slow")}, &res)
	}()
	select {
	case <-arrived:
	case <-time.After(waitFor):
		cancel()
		t.Fatal("the turn never reached the endpoint")
	}
	return cancel, done
}

// TestChatCancelAndBusy: while a turn waits on a slow endpoint, a second
// turn is refused as busy; cancelling the request ($/cancelRequest) stops
// the model call, the turn is recorded cancelled, and the next turn runs.
func TestChatCancelAndBusy(t *testing.T) {
	c, uri, arrived := slowTalker(t)

	cancel, done := slowTurn(t, c, uri, arrived)
	defer cancel()
	var res lsp.ChatResult
	res = c.chat(t, lsp.MethodChat, lsp.ChatParams{URI: uri, Input: ptrStr("second")})
	if len(arrived) != 0 {
		t.Fatal("the refused second turn reached the endpoint")
	}
	if res.Refusal == nil || res.Refusal.Code != conversation.CodeBusy {
		t.Fatalf("a second turn while one runs = %+v", res)
	}
	cancel()
	<-done
	// The next turn: the cancelled one is recorded (not unfinished), so the
	// conversation continues. It may briefly still be busy while the
	// cancelled turn's teardown finishes.
	deadline := time.Now().Add(waitFor)
	for {
		res = c.chat(t, lsp.MethodChat, lsp.ChatParams{URI: uri, Input: ptrStr("next")})
		if res.Refusal == nil || res.Refusal.Code != conversation.CodeBusy || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res.Refusal != nil || res.Chat == nil || res.Chat.Turn == nil || res.Chat.Turn.Answer != "fast" {
		t.Fatalf("turn after cancel = %+v %+v", res.Refusal, res.Chat)
	}
	if ts := res.Chat.Turns; len(ts) != 2 || ts[0].State != conversation.StateCancelled {
		t.Fatalf("history = %+v; want the cancelled turn then the answered one", ts)
	}
}

// TestChatHistoryWhileATurnRuns: while a turn waits on a slow endpoint, the
// history read (opening the panel, kmx/chat without input) is answered, not
// refused as busy: the committed turn answered and the running one pending,
// with no model call; the turn then completes untouched by the read.
func TestChatHistoryWhileATurnRuns(t *testing.T) {
	c, uri, arrived := slowTalker(t)
	if res := c.chat(t, lsp.MethodChat, lsp.ChatParams{URI: uri, Input: ptrStr("hello")}); res.Refusal != nil || res.Chat.Turn == nil || res.Chat.Turn.Answer != "fast" {
		t.Fatalf("turn 1 = %+v %+v", res.Refusal, res.Chat)
	}
	<-arrived

	cancel, done := slowTurn(t, c, uri, arrived)
	defer cancel()
	res := c.chat(t, lsp.MethodChat, lsp.ChatParams{URI: uri})
	if res.Refusal != nil || res.Chat == nil {
		t.Fatalf("history while a turn runs = %+v %+v; want the history", res.Refusal, res.Chat)
	}
	ts := res.Chat.Turns
	if len(ts) != 2 || ts[0].State != conversation.StateAnswered || ts[0].Answer != "fast" || ts[1].State != conversation.StatePending || ts[1].Input != "slow" {
		t.Fatalf("history while a turn runs = %+v; want turn 1 answered and turn 2 pending", ts)
	}
	if res.Chat.Pending != 2 || res.Chat.Unfinished != 0 || res.Chat.ReplayLiveCalls != 0 || len(arrived) != 0 {
		t.Fatalf("pending %d, unfinished %d, replay calls %d, requests %d; want 2, 0, 0, 0", res.Chat.Pending, res.Chat.Unfinished, res.Chat.ReplayLiveCalls, len(arrived))
	}
	cancel()
	<-done
	deadline := time.Now().Add(waitFor)
	for {
		res = c.chat(t, lsp.MethodChat, lsp.ChatParams{URI: uri})
		if res.Chat != nil && res.Chat.Pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ts := res.Chat.Turns; len(ts) != 2 || ts[1].State != conversation.StateCancelled || res.Chat.Unfinished != 0 {
		t.Fatalf("history after the cancel = %+v; want turn 2 cancelled", ts)
	}
}
