package problem_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/conversation"
	"github.com/kmxdev/kmx/sidecar/internal/failures"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// TestEveryRefusalLikeErrorIsAProblem: each engine error a person must act
// on carries its next step through problem.Problem, found with errors.As
// even when wrapped, so the CLI, JSON-RPC and MCP render it alike
// (problem.Text), and the step is said exactly once.
func TestEveryRefusalLikeErrorIsAProblem(t *testing.T) {
	errs := []error{
		&invocation.Refusal{Msg: "refused", Next: "change x"},
		&conversation.Refusal{Code: conversation.CodeBusy, Msg: "busy", Next: "wait"},
		&route.ConfigError{Field: "endpoint", Msg: "not https", Next: "use https"},
		&route.ResolveError{Msg: "no model", Next: "pick one"},
		&state.UnsafeError{Path: "/s", Problem: "mode 0755", Fix: "chmod 700 /s"},
		&localtools.SettingsError{Path: "/w/kmx.yaml", Problem: "bad"},
		&localtools.BindingError{Path: "/w/b.json", Msg: "bad", Hint: "fix it"},
		&journal.RunningError{RunIDs: []string{"r1"}},
		&journal.RunningError{RunIDs: []string{"r1", "r2"}},
		&journal.NotFoundError{RunID: "r1", Dir: "/j"},
		&journal.ChangedError{Path: "/j/r1.db"},
		&journal.UncertainError{RunIDs: []string{"r1"}, Err: errors.New("sync failed")},
		&journal.TamperedError{RunID: "r1", Seq: 3, Reason: "hash"},
		&failures.CorruptError{Dir: "/f", Records: []failures.CorruptRecord{{Name: "a", Reason: "b"}}},
		&agentfile.TooLargeError{Path: "/w/x.agent.md"},
	}
	for _, err := range errs {
		wrapped := fmt.Errorf("kmx something: %w", err)
		var p problem.Problem
		if !errors.As(wrapped, &p) {
			t.Errorf("%T is not a problem.Problem", err)
			continue
		}
		next := p.NextStep()
		if next == "" {
			t.Errorf("%T has no next step", err)
			continue
		}
		if text := problem.Text(wrapped); strings.Count(text, next) != 1 {
			t.Errorf("%T: the next step %q is not said exactly once in %q", err, next, text)
		}
	}
}
