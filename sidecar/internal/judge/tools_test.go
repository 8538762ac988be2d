package judge

import (
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

func TestEvaluateTool(t *testing.T) {
	uses := []ToolUse{{Name: "ping", Source: "recorded"}, {Name: "ping", Source: "live"}}
	tests := []struct {
		typ     agentfile.AssertionType
		name    string
		outcome Outcome
		message string
	}{
		{agentfile.ToolCalled, "ping", Pass, "the model called ping (recorded, live)"},
		{agentfile.ToolCalled, "echo", Fail, "the model did not call echo"},
		{agentfile.ToolNotCalled, "ping", Fail, "the model called ping (recorded, live)"},
		{agentfile.ToolNotCalled, "echo", Pass, "the model did not call echo"},
		{agentfile.Contains, "ping", Unknown, "contains is not a tool assertion"},
	}
	for _, tt := range tests {
		r := EvaluateTool(agentfile.Assertion{Type: tt.typ, Value: tt.name}, uses)
		if r.Outcome != tt.outcome || r.Message != tt.message {
			t.Errorf("%s %s = %v %q, want %v %q", tt.typ, tt.name, r.Outcome, r.Message, tt.outcome, tt.message)
		}
	}
}

// script is a scripted, replay-verified trace: search twice, then fetch,
// then a member of the edit set.
var script = []ToolUse{
	{Name: "search", Source: "recorded", Arguments: `{"query":"kmx","page":1,"filters":{"state":"merged","labels":["bug","ui"]}}`},
	{Name: "search", Source: "recorded", Arguments: `{"query":"journal","page":2}`},
	{Name: "fetch", Source: "unavailable", Arguments: `{"url":"https://example.test/1"}`},
	{Name: "edit/editFiles", Source: "live", Arguments: `{}`},
}

// TestTrajectoryAssertions: each trajectory assertion passes on the
// scripted trace when it holds and fails when it does not.
func TestTrajectoryAssertions(t *testing.T) {
	tests := []struct {
		name    string
		a       agentfile.Assertion
		uses    []ToolUse
		outcome Outcome
		message string
	}{
		{"calledWith subset", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "search"}.With(agentfile.Operands{Arguments: `{"query":"kmx"}`}), script, Pass, ""},
		{"calledWith nested subset", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "search"}.With(agentfile.Operands{Arguments: `{"filters":{"labels":["bug","ui"]},"page":1.0}`}), script, Pass, ""},
		{"calledWith second call", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "search"}.With(agentfile.Operands{Arguments: `{"query":"journal"}`}), script, Pass, ""},
		{"calledWith empty arguments match any call", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "fetch"}.With(agentfile.Operands{Arguments: `{}`}), script, Pass, ""},
		{"calledWith wrong value", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "search"}.With(agentfile.Operands{Arguments: `{"query":"other"}`}), script, Fail, "the model called search 2 times, never with arguments that contain the expected ones"},
		{"calledWith wrong value of one call", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "fetch"}.With(agentfile.Operands{Arguments: `{"url":"other"}`}), script, Fail, "the model called fetch once, with arguments that do not contain the expected ones"},
		{"calledWith values of two calls do not combine", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "search"}.With(agentfile.Operands{Arguments: `{"query":"kmx","page":2}`}), script, Fail, ""},
		{"calledWith array is not a subset", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "search"}.With(agentfile.Operands{Arguments: `{"filters":{"labels":["bug"]}}`}), script, Fail, ""},
		{"calledWith tool not called", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "ping"}.With(agentfile.Operands{Arguments: `{}`}), script, Fail, "the model did not call ping"},
		{"calledWith by set name", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "edit"}.With(agentfile.Operands{Arguments: `{}`}), script, Pass, ""},
		{"calledWith unreadable arguments is unknown", agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "x"}.With(agentfile.Operands{Arguments: `{"a":1}`}), []ToolUse{{Name: "x", Arguments: `{not json`}}, Unknown, ""},
		{"order holds", agentfile.Assertion{Type: agentfile.ToolOrder}.With(agentfile.Operands{Names: []string{"search", "fetch"}}), script, Pass, ""},
		{"order with repeats", agentfile.Assertion{Type: agentfile.ToolOrder}.With(agentfile.Operands{Names: []string{"search", "search", "edit"}}), script, Pass, ""},
		{"order reversed", agentfile.Assertion{Type: agentfile.ToolOrder}.With(agentfile.Operands{Names: []string{"fetch", "search"}}), script, Fail, "the model called fetch in order, then no search"},
		{"order never started", agentfile.Assertion{Type: agentfile.ToolOrder}.With(agentfile.Operands{Names: []string{"ping", "search"}}), script, Fail, "the model never called ping (the first of the order)"},
		{"order on no calls", agentfile.Assertion{Type: agentfile.ToolOrder}.With(agentfile.Operands{Names: []string{"search", "fetch"}}), nil, Fail, ""},
		{"calls within max", agentfile.Assertion{Type: agentfile.ToolCalls}.With(agentfile.Operands{Max: intp(4)}), script, Pass, "the model made 4 tool calls, at most 4 calls"},
		{"calls over max", agentfile.Assertion{Type: agentfile.ToolCalls}.With(agentfile.Operands{Max: intp(3)}), script, Fail, "the model made 4 tool calls; the bound is at most 3 calls"},
		{"one call within max", agentfile.Assertion{Type: agentfile.ToolCalls}.With(agentfile.Operands{Min: intp(1), Max: intp(2)}), script[:1], Pass, "the model made 1 tool call, at least 1 and at most 2 calls"},
		{"calls over max one", agentfile.Assertion{Type: agentfile.ToolCalls}.With(agentfile.Operands{Max: intp(1)}), script, Fail, "the model made 4 tool calls; the bound is at most 1 call"},
		{"calls under min", agentfile.Assertion{Type: agentfile.ToolCalls}.With(agentfile.Operands{Min: intp(5)}), script, Fail, ""},
		{"calls between", agentfile.Assertion{Type: agentfile.ToolCalls}.With(agentfile.Operands{Min: intp(1), Max: intp(5)}), script, Pass, ""},
		{"max 0 on no calls", agentfile.Assertion{Type: agentfile.ToolCalls}.With(agentfile.Operands{Max: intp(0)}), nil, Pass, ""},
		{"no others", agentfile.Assertion{Type: agentfile.NoOtherTools}.With(agentfile.Operands{Names: []string{"search", "fetch", "edit"}}), script, Pass, ""},
		{"others called", agentfile.Assertion{Type: agentfile.NoOtherTools}.With(agentfile.Operands{Names: []string{"search"}}), script, Fail, "the model called fetch, edit/editFiles, outside search"},
		{"server wildcard covers the tools it brought in", agentfile.Assertion{Type: agentfile.NoOtherTools}.With(agentfile.Operands{Names: []string{"github/*"}}), []ToolUse{{Name: "github/list_prs", Reference: "github/*"}}, Pass, ""},
		{"server wildcard does not cover a tool listed on its own", agentfile.Assertion{Type: agentfile.NoOtherTools}.With(agentfile.Operands{Names: []string{"github/*"}}), []ToolUse{{Name: "github/list_issues", Reference: "github/list_issues"}}, Fail, ""},
		{"a prefix is not a set", agentfile.Assertion{Type: agentfile.NoOtherTools}.With(agentfile.Operands{Names: []string{"edit"}}), []ToolUse{{Name: "editor"}}, Fail, ""},
		{"toolCalled by set name", agentfile.Assertion{Type: agentfile.ToolCalled, Value: "edit"}, script, Pass, "the model called edit (live)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := EvaluateTool(tt.a, tt.uses)
			if r.Outcome != tt.outcome || tt.message != "" && r.Message != tt.message {
				t.Errorf("= %v %q, want %v %q", r.Outcome, r.Message, tt.outcome, tt.message)
			}
		})
	}
}

func TestBudgets(t *testing.T) {
	ms := func(f float64) *float64 { return &f }
	tests := []struct {
		name    string
		a       agentfile.Assertion
		m       Measures
		outcome Outcome
	}{
		{"latency within", agentfile.Assertion{Type: agentfile.MaxLatencyMs}.With(agentfile.Operands{Limit: 100}), Measures{DurationMs: ms(99.5)}, Pass},
		{"latency at the limit", agentfile.Assertion{Type: agentfile.MaxLatencyMs}.With(agentfile.Operands{Limit: 100}), Measures{DurationMs: ms(100)}, Pass},
		{"latency over", agentfile.Assertion{Type: agentfile.MaxLatencyMs}.With(agentfile.Operands{Limit: 100}), Measures{DurationMs: ms(100.1)}, Fail},
		{"latency not journaled", agentfile.Assertion{Type: agentfile.MaxLatencyMs}.With(agentfile.Operands{Limit: 100}), Measures{}, Unknown},
		{"tokens within", agentfile.Assertion{Type: agentfile.MaxTokens}.With(agentfile.Operands{Limit: 50}), Measures{TotalTokens: intp(50)}, Pass},
		{"tokens over", agentfile.Assertion{Type: agentfile.MaxTokens}.With(agentfile.Operands{Limit: 50}), Measures{TotalTokens: intp(51)}, Fail},
		{"no usage reported is unknown, never a pass", agentfile.Assertion{Type: agentfile.MaxTokens}.With(agentfile.Operands{Limit: 50}), Measures{DurationMs: ms(1)}, Unknown},
		{"not a budget", agentfile.Assertion{Type: agentfile.Contains, Value: "x"}, Measures{TotalTokens: intp(1)}, Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := EvaluateBudget(tt.a, tt.m); r.Outcome != tt.outcome || r.Message == "" {
				t.Errorf("= %v %q, want %v", r.Outcome, r.Message, tt.outcome)
			}
		})
	}
	// The evidence line reads `expected "at most 50 tokens" · actual "51 tokens"`.
	if r := EvaluateBudget(agentfile.Assertion{Type: agentfile.MaxTokens}.With(agentfile.Operands{Limit: 50}), Measures{TotalTokens: intp(51)}); r.Expected != "at most 50 tokens" || r.Actual != "51 tokens" {
		t.Errorf("maxTokens evidence: expected %q, actual %q", r.Expected, r.Actual)
	}
}

func TestAnswerPathNeverJudgesTraceOrBudget(t *testing.T) {
	for _, typ := range []agentfile.AssertionType{agentfile.ToolCalledWith, agentfile.ToolOrder, agentfile.ToolCalls, agentfile.NoOtherTools, agentfile.MaxLatencyMs, agentfile.MaxTokens} {
		if r := Evaluate(t.Context(), agentfile.Assertion{Type: typ}, "in", "answer", nil); r.Outcome != Unknown {
			t.Errorf("%s judged from an answer: %v", typ, r.Outcome)
		}
	}
}

func TestCalledWithNeverEchoesACredential(t *testing.T) {
	key := "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
	r := EvaluateTool(agentfile.Assertion{Type: agentfile.ToolCalledWith, Value: "x"}.With(agentfile.Operands{Arguments: `{"a":1}`}), []ToolUse{{Name: "x", Arguments: `{"token":"` + key + `"}`}})
	if r.Outcome != Fail || strings.Contains(r.Actual+r.Message, key) {
		t.Fatalf("= %v %q %q", r.Outcome, r.Message, r.Actual)
	}
}
