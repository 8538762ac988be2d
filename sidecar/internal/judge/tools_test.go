package judge

import (
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
