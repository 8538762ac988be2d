package route

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestMockOpenAIServer sends real requests through the compatible route to
// an OpenAI-compatible server nobody on this project wrote.
func TestMockOpenAIServer(t *testing.T) {
	base := testutil.MockOpenAI(t)
	tests := []struct {
		name, model, input string
		wantStatus         int // 0: accepted, the answer echoes the input
	}{
		{"echo", "gpt-5.6-terra", "Draft notes for this week", 0},
		{"other model name echoed exactly", "llama3.2:3b-instruct", "hello there", 0},
		{"unicode input", "kmx-test-model", "caf\u00e9 \u2014 r\u00e9sum\u00e9", 0},
		// Finding: mock-llm pastes the input into its JSON template without
		// escaping, so an input holding a double quote makes it answer 500.
		// The route reports the status and nothing else.
		{"input with a quote", "kmx-test-model", `say "MARK-quote"`, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustCompatible(t, Config{Endpoint: base + "/v1", Model: tt.model})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			comp, err := m.Complete(ctx, ChatRequest(tt.model, "Reply with the input.", tt.input))
			if tt.wantStatus != 0 {
				var re *ReplyError
				if !errors.As(err, &re) || re.Class != ClassStatus || re.Status != tt.wantStatus {
					t.Fatalf("Complete = (%+v, %v), want a status %d refusal", comp, err, tt.wantStatus)
				}
				if strings.Contains(err.Error(), "MARK") || strings.Contains(err.Error(), "SyntaxError") {
					t.Errorf("error %q quotes the input or the server's body", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := Completion{Model: tt.model, Text: tt.input, FinishReason: "stop"}
			if !reflect.DeepEqual(comp, want) {
				t.Errorf("Complete = %+v, want %+v", comp, want)
			}
		})
	}
}

// TestMockOpenAIServerToolCalls runs a tool turn's two sends through the
// route against the same third-party server, configured by its documented
// rules file to answer with tool_calls. Its rules check, with its own
// JMESPath engine, the wire shape of both requests (tools as functions, the
// assistant message with its calls, one tool message per call ID); a
// request they do not match is answered NO-RULE-MATCHED.
func TestMockOpenAIServerToolCalls(t *testing.T) {
	base := testutil.MockOpenAIWithRules(t, testutil.MockOpenAIToolRules)
	const model = "gpt-5.6-terra"
	m := mustCompatible(t, Config{Endpoint: base + "/v1", Model: model})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := ChatRequest(model, "Write release notes.", "What shipped?")
	req.Tools = []ToolDef{
		{Name: "search_docs", Description: "Search the docs.", Parameters: `{"type":"object","properties":{"query":{"type":"string"}}}`},
		{Name: "fetch_page", Description: "Fetch a page.", Parameters: `{"type":"object"}`},
	}
	c, err := m.Complete(ctx, req)
	if err != nil {
		t.Fatalf("send 1: %v", err)
	}
	want := []ToolCall{
		{ID: "call_1", Name: "search_docs", Arguments: `{"query":"release"}`},
		{ID: "call_2", Name: "fetch_page", Arguments: `{"url":"https://example.com/notes"}`},
	}
	if c.FinishReason != "tool_calls" || c.Text != "" || !reflect.DeepEqual(c.ToolCalls, want) {
		t.Fatalf("send 1 = %+v, want the batch %+v", c, want)
	}
	req2 := sendTwo(req, c, `{"pullRequests":["MERGED-PR-12"]}`, "This tool is not available in this test.")
	c2, err := m.Complete(ctx, req2)
	if err != nil {
		t.Fatalf("send 2: %v", err)
	}
	if c2.Text != "Release notes: MERGED-PR-12 is in. The page fetch was not available in this test." || c2.FinishReason != "stop" {
		t.Fatalf("send 2 = %+v: the server's rules did not match kmx's send 2", c2)
	}
	// A tool-free request matches no tool rule: the plain answer.
	c3, err := m.Complete(ctx, ChatRequest(model, "sys", "hello"))
	if err != nil || c3.Text != "NO-RULE-MATCHED" {
		t.Fatalf("tool-free send = (%+v, %v)", c3, err)
	}
}
