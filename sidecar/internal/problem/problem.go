// Package problem is the one shape of a refusal-like error: what is wrong
// and the next step. Engine errors that a person must act on (a runner
// refusal, a route setting, an unsafe state folder, a journal that cannot
// be read) implement Problem; the CLI, the language server (JSON-RPC) and
// the MCP server render every one of them with Text, so the same problem
// reads the same on every front. It owns no state and decides nothing.
package problem

import (
	"errors"
	"strings"
)

// Problem is an error that says what to do next.
type Problem interface {
	error
	// NextStep is one sentence saying what to change; it never holds a
	// credential value.
	NextStep() string
}

// SetKMXHome is the next step for a state folder kmx cannot find or use.
const SetKMXHome = "set KMX_HOME to the absolute path of a private folder"

// New returns a Problem with a message and a next step.
func New(msg, next string) error { return &basic{msg: msg, next: next} }

// Wrap gives err a next step, keeping it in the chain (errors.Is/As).
func Wrap(err error, next string) error {
	if err == nil {
		return nil
	}
	return &basic{msg: err.Error(), next: next, err: err}
}

type basic struct {
	msg, next string
	err       error
}

func (b *basic) Error() string    { return b.msg }
func (b *basic) NextStep() string { return b.next }
func (b *basic) Unwrap() error    { return b.err }

// NextStep returns the next step of the first Problem in err's chain, or "".
func NextStep(err error) string {
	var p Problem
	if errors.As(err, &p) {
		return p.NextStep()
	}
	return ""
}

// Text renders err as every front shows it: the message, then the next
// step on its own line as "next: ...". A message that already ends with
// its next step (many engine errors read whole on their own) gives it up
// to that line, so the step is said once, always in the same place.
func Text(err error) string {
	next := NextStep(err)
	if next == "" {
		return err.Error()
	}
	return WithoutStep(err.Error(), next) + "\nnext: " + next
}

// WithoutStep is msg without next at its end (and the separator before
// it), for a front that shows next on its own line.
func WithoutStep(msg, next string) string {
	if head, ok := strings.CutSuffix(msg, next); ok && next != "" {
		if head = strings.TrimRight(head, " ;:,"); head != "" {
			return head
		}
	}
	return msg
}
