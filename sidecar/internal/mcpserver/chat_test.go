package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/conversation"
)

// TestChatRemembersBetweenCalls: two Chat calls are two turns of the file's
// conversation, the second sent with the first as history; a call without
// input reads the history with zero model calls; refusals are isError
// results that say what to change.
func TestChatRemembersBetweenCalls(t *testing.T) {
	cs := connectFresh(t)
	file := fixture(t, "talker.agent.md")

	var res conversation.Transcript
	r := call(t, cs, "Chat", map[string]any{"file": file, "input": "hello", "conversation": "mcp"})
	if r.IsError || !strings.Contains(text(r), "agent: Turn 1: hello") || !strings.Contains(text(r), "local preview") {
		t.Fatalf("first Chat: %s", text(r))
	}
	r = call(t, cs, "Chat", map[string]any{"file": file, "input": "again", "conversation": "mcp"})
	decode(t, r, &res)
	if r.IsError || res.Turn == nil || res.Turn.Answer != "Turn 2: again" || len(res.Turns) != 2 || res.Schema != conversation.Schema {
		t.Fatalf("second Chat: %s %+v", text(r), res)
	}
	r = call(t, cs, "Chat", map[string]any{"file": file, "conversation": "mcp"})
	res = conversation.Transcript{}
	decode(t, r, &res)
	if r.IsError || len(res.Turns) != 2 || res.ReplayLiveCalls != 0 || !strings.Contains(text(r), "replayed with 0 model calls") {
		t.Fatalf("history: %s %+v", text(r), res)
	}
	r = call(t, cs, "Chat", map[string]any{"file": file, "input": "x", "conversation": "mcp", "model": "other"})
	if !r.IsError || !strings.Contains(text(r), "next: ") {
		t.Fatalf("another model was not refused: %s", text(r))
	}
	r = call(t, cs, "Chat", map[string]any{"file": file, "input": " ", "conversation": "mcp"})
	if !r.IsError || !strings.Contains(text(r), "empty") {
		t.Fatalf("an empty message was not refused: %s", text(r))
	}
}
