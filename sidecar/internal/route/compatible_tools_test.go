package route

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// toolEndpoint is an OpenAI-compatible endpoint on 127.0.0.1 that answers
// each request with the next of its replies and keeps every request body.
type toolEndpoint struct {
	srv     *httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	replies []string
	status  int
}

func newToolEndpoint(t *testing.T, replies ...string) *toolEndpoint {
	t.Helper()
	e := &toolEndpoint{replies: replies, status: http.StatusOK}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		n := len(e.bodies)
		e.bodies = append(e.bodies, body)
		e.mu.Unlock()
		if n >= len(e.replies) {
			http.Error(w, "no more replies", http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(e.status)
		fmt.Fprint(w, e.replies[n])
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *toolEndpoint) model(t *testing.T) *CompatibleModel {
	return mustCompatible(t, Config{Endpoint: e.srv.URL + "/v1", Model: testModel})
}

func (e *toolEndpoint) requests() [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]byte(nil), e.bodies...)
}

// compatOffered is the tool set the tests offer: one with a real schema.
var compatOffered = []ToolDef{
	{Name: "search", Description: "Search the workspace.", Parameters: `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`},
	{Name: "read_file", Description: "Read a file.", Parameters: `{"type": "object"}`},
}

// compatToolRequest is send 1 of a tool turn.
func compatToolRequest() Request {
	req := ChatRequest(testModel, "Use the tools.", "Find MARK-input.")
	req.Tools = compatOffered
	return req
}

// callJSON is one wire tool call.
func callJSON(id, name, args string) string {
	a, _ := json.Marshal(args)
	return `{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + string(a) + `}}`
}

// callsReply is a reply requesting calls, with content as given (raw JSON,
// or "" for no content key).
func callsReply(content string, calls ...string) string {
	msg := `{"role":"assistant",`
	if content != "" {
		msg += `"content":` + content + `,`
	}
	msg += `"tool_calls":[` + strings.Join(calls, ",") + `]}`
	return toolReply(testModel, "tool_calls", msg)
}

// sendTwo is send 2 after calls answered with results.
func sendTwo(first Request, c Completion, results ...string) Request {
	msgs := append(append([]Message(nil), first.Messages...), Message{Role: "assistant", Content: c.Text, ToolCalls: c.ToolCalls})
	for i, tc := range c.ToolCalls {
		msgs = append(msgs, Message{Role: "tool", Content: results[i], ToolCallID: tc.ID})
	}
	return Request{Model: first.Model, Messages: msgs, Tools: first.Tools}
}

func TestCompatibleToolTurnWireAndAcceptedShapes(t *testing.T) {
	for _, content := range []string{"", "null", `""`, `"Let me look."`} {
		t.Run("content "+content, func(t *testing.T) {
			e := newToolEndpoint(t,
				callsReply(content, callJSON("call_1", "search", `{"query":"MARK-q"}`), callJSON("call_2", "read_file", `{}`)),
				okReply(testModel, "Found it."))
			m := e.model(t)
			req := compatToolRequest()
			c, err := m.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("send 1: %v", err)
			}
			wantText := ""
			if content == `"Let me look."` {
				wantText = "Let me look."
			}
			want := Completion{Model: testModel, Text: wantText, FinishReason: "tool_calls", ToolCalls: []ToolCall{
				{ID: "call_1", Name: "search", Arguments: `{"query":"MARK-q"}`}, {ID: "call_2", Name: "read_file", Arguments: `{}`}}}
			if !reflect.DeepEqual(c, want) {
				t.Fatalf("send 1 = %+v, want %+v", c, want)
			}
			req2 := sendTwo(req, c, `{"hits":1}`, "This tool is not available in this test.")
			c2, err := m.Complete(context.Background(), req2)
			if err != nil {
				t.Fatalf("send 2: %v", err)
			}
			if c2.Text != "Found it." || c2.FinishReason != "stop" || len(c2.ToolCalls) != 0 {
				t.Fatalf("send 2 = %+v", c2)
			}

			bodies := e.requests()
			if len(bodies) != 2 {
				t.Fatalf("endpoint saw %d requests, want 2", len(bodies))
			}
			// Each body is exactly CompatibleBody of its request: what the
			// journal rebuilds is what was sent.
			for i, r := range []Request{req, req2} {
				rebuilt, err := CompatibleBody(r)
				if err != nil || string(rebuilt) != string(bodies[i]) {
					t.Errorf("send %d: body %s\nrebuilt %s (%v)", i+1, bodies[i], rebuilt, err)
				}
			}
			var w1 struct {
				Stream bool `json:"stream"`
				Tools  []struct {
					Type     string `json:"type"`
					Function struct {
						Name        string         `json:"name"`
						Description string         `json:"description"`
						Parameters  map[string]any `json:"parameters"`
					} `json:"function"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(bodies[0], &w1); err != nil {
				t.Fatal(err)
			}
			if w1.Stream || len(w1.Tools) != 2 || w1.Tools[0].Type != "function" || w1.Tools[0].Function.Name != "search" ||
				w1.Tools[0].Function.Description != "Search the workspace." || w1.Tools[0].Function.Parameters["required"] == nil {
				t.Errorf("send 1 tools on the wire: %+v", w1)
			}
			var w2 struct {
				Messages []map[string]json.RawMessage `json:"messages"`
			}
			if err := json.Unmarshal(bodies[1], &w2); err != nil {
				t.Fatal(err)
			}
			if len(w2.Messages) != 5 {
				t.Fatalf("send 2 has %d messages, want system, user, assistant, 2 tool", len(w2.Messages))
			}
			asst := w2.Messages[2]
			wantContent := "null"
			if wantText != "" {
				wantContent = `"Let me look."`
			}
			if string(asst["role"]) != `"assistant"` || string(asst["content"]) != wantContent ||
				!strings.Contains(string(asst["tool_calls"]), `"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"query\":\"MARK-q\"}"}`) {
				t.Errorf("send 2 assistant message: %s", bodies[1])
			}
			for i, id := range []string{"call_1", "call_2"} {
				tm := w2.Messages[3+i]
				if string(tm["role"]) != `"tool"` || string(tm["tool_call_id"]) != `"`+id+`"` {
					t.Errorf("send 2 tool message %d: %v", i+1, tm)
				}
			}
		})
	}
}

func TestCompatibleToolPathTextOnlyReply(t *testing.T) {
	e := newToolEndpoint(t, toolReply(testModel, "stop", `{"role":"assistant","content":"No tools needed.","tool_calls":[]}`))
	c, err := e.model(t).Complete(context.Background(), compatToolRequest())
	if err != nil || c.Text != "No tools needed." || c.FinishReason != "stop" || c.ToolCalls != nil {
		t.Fatalf("Complete = (%+v, %v)", c, err)
	}
}

// refusedTool sends req (send 1 unless a first completion is given, then
// send 2) to an endpoint answering reply, and wants class.
func refusedTool(t *testing.T, req Request, reply string, class ReplyClass) *ReplyError {
	t.Helper()
	e := newToolEndpoint(t, reply)
	c, err := e.model(t).Complete(context.Background(), req)
	var re *ReplyError
	if !errors.As(err, &re) || re.Class != class {
		t.Fatalf("Complete = (%+v, %v), want a %s refusal", c, err, class)
	}
	if !reflect.DeepEqual(c, Completion{}) {
		t.Errorf("a refused reply still returned a completion")
	}
	assertQuotesNothing(t, err.Error(), []byte(reply))
	for _, s := range []string{"MARK", "call_", "query"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q quotes the reply or the request", err)
		}
	}
	return re
}

func TestCompatibleRefusesToolCallOnSendTwo(t *testing.T) {
	first := Completion{Model: testModel, FinishReason: "tool_calls", ToolCalls: []ToolCall{{ID: "call_1", Name: "search", Arguments: `{}`}}}
	req2 := sendTwo(compatToolRequest(), first, "MARK-result")
	refusedTool(t, req2, callsReply("null", callJSON("call_9", "search", `{"query":"MARK-again"}`)), ClassToolRound)
	// finish_reason tool_calls alone is another round too.
	refusedTool(t, req2, toolReply(testModel, "tool_calls", `{"content":"MARK-text"}`), ClassToolRound)
}

func TestCompatibleRefusesUnofferedToolName(t *testing.T) {
	re := refusedTool(t, compatToolRequest(), callsReply("null", callJSON("call_1", "search", `{}`), callJSON("call_2", "MARKdelete_all", `{}`)), ClassToolName)
	if re.Detail != "tool call 2" {
		t.Errorf("detail %q, want the call's position", re.Detail)
	}
	// Names match exactly: no case folding.
	refusedTool(t, compatToolRequest(), callsReply("null", callJSON("call_1", "Search", `{}`)), ClassToolName)
}

func TestCompatibleRefusesNonObjectArguments(t *testing.T) {
	for _, args := range []string{`["MARK"]`, `"MARK"`, `12`, `null`, ``, `{"q":"MARK"`, `{"q":1} {"r":2}`, `{"q":1}x`} {
		t.Run(args, func(t *testing.T) {
			refusedTool(t, compatToolRequest(), callsReply("null", callJSON("call_1", "search", args)), ClassToolArguments)
		})
	}
	// arguments given as an object, not a string holding one.
	refusedTool(t, compatToolRequest(), callsReply("null", `{"id":"call_1","type":"function","function":{"name":"search","arguments":{"q":"MARK"}}}`), ClassToolArguments)
}

func TestCompatibleRefusesRepeatedKeyInArguments(t *testing.T) {
	for _, args := range []string{`{"q":"MARK","q":"MARK2"}`, `{"q":1,"Q":2}`, `{"a":{"q":[{"x":1,"x":2}]}}`, `{"k":1,"` + "\u212a" + `":2}`} {
		t.Run(args, func(t *testing.T) {
			re := refusedTool(t, compatToolRequest(), callsReply("null", callJSON("call_1", "search", args)), ClassToolArguments)
			if !strings.Contains(re.Detail, "repeat a key") {
				t.Errorf("detail %q does not name the repeated key", re.Detail)
			}
		})
	}
}

func TestCompatibleRefusesSixthToolCall(t *testing.T) {
	calls := make([]string, 6)
	for i := range calls {
		calls[i] = callJSON(fmt.Sprintf("call_%d", i+1), "search", `{}`)
	}
	re := refusedTool(t, compatToolRequest(), callsReply("null", calls...), ClassToolBatch)
	if !strings.Contains(re.Detail, "6 tool calls; at most 5") {
		t.Errorf("detail %q", re.Detail)
	}
	// Five is the bound, not past it.
	e := newToolEndpoint(t, callsReply("null", calls[:5]...))
	if c, err := e.model(t).Complete(context.Background(), compatToolRequest()); err != nil || len(c.ToolCalls) != 5 {
		t.Fatalf("five calls: (%+v, %v)", c, err)
	}
}

func TestCompatibleRefusesDuplicateCallIDs(t *testing.T) {
	re := refusedTool(t, compatToolRequest(), callsReply("null", callJSON("call_1", "search", `{}`), callJSON("call_1", "read_file", `{}`)), ClassToolBatch)
	if !strings.Contains(re.Detail, "tool call 2 repeats a call ID") {
		t.Errorf("detail %q", re.Detail)
	}
	refusedTool(t, compatToolRequest(), callsReply("null", callJSON("", "search", `{}`)), ClassToolBatch)
}

func TestCompatibleRefusesToolCallWhenNoToolsOffered(t *testing.T) {
	req := ChatRequest(testModel, "No tools here.", "Find MARK-input.")
	refusedTool(t, req, callsReply("null", callJSON("call_1", "search", `{}`)), ClassToolCall)
	refusedTool(t, req, toolReply(testModel, "tool_calls", `{"content":"MARK"}`), ClassToolCall)
}

func TestCompatibleToolPathKeepsEveryReplyCheck(t *testing.T) {
	call := callJSON("call_1", "search", `{"query":"MARK"}`)
	tests := []struct {
		name  string
		reply string
		class ReplyClass
	}{
		{"wrong model", strings.Replace(callsReply("null", call), testModel, "MARK other; a model name that is not plain", 1), ClassModel},
		{"repeated key in a call", callsReply("null", `{"id":"call_1","id":"call_2","type":"function","function":{"name":"search","arguments":"{}"}}`), ClassDuplicateKey},
		{"aliased key in the message", toolReply(testModel, "tool_calls", `{"Content":null,"content":null,"tool_calls":[`+call+`]}`), ClassDuplicateKey},
		{"aliased tool_calls", toolReply(testModel, "tool_calls", `{"tool_calls":[`+call+`],"Tool_calls":null}`), ClassDuplicateKey},
		{"tool_calls in another spelling", toolReply(testModel, "tool_calls", `{"toolCalls":[`+call+`]}`), ClassToolCall},
		{"legacy function_call", toolReply(testModel, "function_call", `{"function_call":{"name":"search","arguments":"{}"}}`), ClassToolCall},
		{"tool call outside the message", `{"model":"` + testModel + `","tool_calls":[` + call + `],"choices":[{"message":{"content":"MARK"},"finish_reason":"stop"}]}`, ClassToolCall},
		{"refusal beside calls", toolReply(testModel, "tool_calls", `{"refusal":"MARK no","tool_calls":[`+call+`]}`), ClassRefusal},
		{"error object", `{"error":{"message":"MARK"},"model":"` + testModel + `","choices":[]}`, ClassErrorObject},
		{"truncated body", callsReply("null", call)[:60], ClassMalformed},
		{"finish length", toolReply(testModel, "length", `{"tool_calls":[`+call+`]}`), ClassTruncated},
		{"calls with finish stop", toolReply(testModel, "stop", `{"tool_calls":[`+call+`]}`), ClassFinishReason},
		{"finish tool_calls with no calls", toolReply(testModel, "tool_calls", `{"content":"MARK","tool_calls":[]}`), ClassToolBatch},
		{"tool_calls not a list", toolReply(testModel, "tool_calls", `{"tool_calls":{"id":"MARK"}}`), ClassToolBatch},
		{"call type not function", callsReply("null", `{"id":"call_1","type":"MARK","function":{"name":"search","arguments":"{}"}}`), ClassToolBatch},
		{"call without function", callsReply("null", `{"id":"call_1","type":"function"}`), ClassToolBatch},
		{"two choices", `{"model":"` + testModel + `","choices":[{"message":{"tool_calls":[` + call + `]},"finish_reason":"tool_calls"},{"message":{"content":"MARK"},"finish_reason":"stop"}]}`, ClassChoices},
		{"trailing data", callsReply("null", call) + `{"MARK":1}`, ClassTrailingData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refusedTool(t, compatToolRequest(), tt.reply, tt.class)
		})
	}
	t.Run("non-200", func(t *testing.T) {
		e := newToolEndpoint(t, callsReply("null", call))
		e.status = http.StatusInternalServerError
		_, err := e.model(t).Complete(context.Background(), compatToolRequest())
		var re *ReplyError
		if !errors.As(err, &re) || re.Class != ClassStatus || re.Status != 500 {
			t.Fatalf("Complete = %v, want a status refusal", err)
		}
	})
}

func TestCompatibleRefusesCredentialInToolCall(t *testing.T) {
	key := testKey()
	// Escaped twice: the reply body holds the arguments' JSON inside a JSON
	// string, so a \u-escaped copy inside them is only the credential once
	// both layers are decoded.
	twice := `\\u0067\\u0068` + key[2:]
	tests := []struct{ name, reply string }{
		{"in the arguments", callsReply("null", callJSON("call_1", "search", `{"q":"`+key+`"}`))},
		{"escaped twice in the arguments", callsReply("null", `{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"`+twice+`\"}"}}`)},
		{"as the call ID", callsReply("null", callJSON(key, "search", `{}`))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, tt.reply)
			}))
			defer srv.Close()
			m := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", KeyEnv: "KMX_KEY", Model: testModel,
				Getenv: envWith(map[string]string{"KMX_KEY": key}), HTTPClient: trustingClient(t, srv)})
			c, err := m.Complete(context.Background(), compatToolRequest())
			var re *ReplyError
			if !errors.As(err, &re) || re.Class != ClassCredential {
				t.Fatalf("Complete = (%+v, %v), want a %s refusal", c, err, ClassCredential)
			}
			if strings.Contains(err.Error(), key[2:]) {
				t.Errorf("error text holds the credential")
			}
		})
	}
}

func TestCompatibleRefusesToolRequestHoldingCredential(t *testing.T) {
	key := testKey()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request holding the credential was sent")
	}))
	defer srv.Close()
	km := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", KeyEnv: "KMX_KEY", Model: testModel,
		Getenv: envWith(map[string]string{"KMX_KEY": key}), HTTPClient: trustingClient(t, srv)})
	withDef := compatToolRequest()
	withDef.Tools = []ToolDef{{Name: "search", Description: "token " + key, Parameters: `{"type":"object"}`}}
	first := Completion{ToolCalls: []ToolCall{{ID: "call_1", Name: "search", Arguments: `{"q":"` + key + `"}`}}}
	for _, req := range []Request{withDef, sendTwo(compatToolRequest(), first, "x"), sendTwo(compatToolRequest(), Completion{ToolCalls: []ToolCall{{ID: "c", Name: "search", Arguments: "{}"}}}, "result "+key)} {
		_, err := km.Complete(context.Background(), req)
		var re *ReplyError
		if !errors.As(err, &re) || re.Class != ClassRequestCredential {
			t.Errorf("Complete = %v, want a %s refusal", err, ClassRequestCredential)
		}
	}
}

func TestCompatibleRefusesUnsendableToolDefinitions(t *testing.T) {
	e := newToolEndpoint(t)
	m := e.model(t)
	tests := []struct {
		name string
		defs []ToolDef
		want string
	}{
		{"slash in the name", []ToolDef{{Name: "edit/editFiles", Parameters: `{"type":"object"}`}}, `"edit/editFiles" cannot be offered`},
		{"dot in the name", []ToolDef{{Name: "github.search", Parameters: `{}`}}, "1 to 64 letters"},
		{"name over 64 bytes", []ToolDef{{Name: strings.Repeat("a", 65), Parameters: `{}`}}, "cannot be offered"},
		{"empty name", []ToolDef{{Name: "", Parameters: `{}`}}, "cannot be offered"},
		{"non-ASCII name", []ToolDef{{Name: "suche_ü", Parameters: `{}`}}, "cannot be offered"},
		{"parameters not an object", []ToolDef{{Name: "search", Parameters: `[]`}}, "not one JSON Schema object"},
		{"parameters not JSON", []ToolDef{{Name: "search", Parameters: `{"type":`}}, "not one JSON Schema object"},
		{"offered twice", []ToolDef{{Name: "search", Parameters: `{}`}, {Name: "search", Parameters: `{}`}}, "offered twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := compatToolRequest()
			req.Tools = tt.defs
			_, err := m.Complete(context.Background(), req)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "tools" || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Complete = %v, want a tools config error saying %q", err, tt.want)
			}
		})
	}
	for _, ok := range []string{"a", "search_code", "run-in-terminal", "A9_-", strings.Repeat("z", 64)} {
		if err := CheckFunctionName(ok); err != nil {
			t.Errorf("CheckFunctionName(%q) = %v", ok, err)
		}
	}
	if n := len(e.requests()); n != 0 {
		t.Errorf("endpoint saw %d requests; refused definitions must not be sent", n)
	}
}

func TestCompatibleToolFreeBodyUnchanged(t *testing.T) {
	// The tool-free body is byte for byte what it was before tools.
	b, err := CompatibleBody(ChatRequest("m", "sys", "in"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"in"}],"stream":false}`
	if string(b) != want {
		t.Errorf("body %s, want %s", b, want)
	}
}

// The tool path reads the reply's usage as the text path does, on a batch
// and on the answer after it, so a maxTokens budget on a tool-calling
// endpoint is judged, not unknown.
func TestDecodeToolReplyUsage(t *testing.T) {
	offered := []ToolDef{{Name: "ping"}}
	const usage = `,"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`
	want := Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}
	batch := `{"model":"m","choices":[{"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ping","arguments":"{}"}}]}}]`
	answer := `{"model":"m","choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"pong"}}]`
	for name, tc := range map[string]struct {
		body  string
		after bool
	}{"batch": {batch, false}, "answer": {answer, true}} {
		c, err := DecodeToolReply([]byte(tc.body+usage), "m", offered, tc.after)
		if err != nil || c.Usage == nil || *c.Usage != want {
			t.Fatalf("%s: usage = %+v, %v; want %+v", name, c.Usage, err, want)
		}
		if c, err := DecodeToolReply([]byte(tc.body+"}"), "m", offered, tc.after); err != nil || c.Usage != nil {
			t.Fatalf("%s without usage: %+v, %v; want none", name, c.Usage, err)
		}
	}
}
