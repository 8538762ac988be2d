package cli

import (
	"errors"
	"fmt"
)

// Exit codes, the same for every subcommand.
const (
	ExitOK      = 0 // success: no errors, every selected example passed
	ExitFailure = 1 // findings or failures: an error diagnostic, a fail or unknown verdict
	ExitRefusal = 2 // a refusal or a usage error: nothing ran
)

// UsageError is a command line that cannot be carried out as written. Its
// message says what to type instead.
type UsageError struct {
	Msg  string
	Next string // what to do next, one line
}

func (e *UsageError) Error() string { return e.Msg }

// NextStep is what to type instead (problem.Problem).
func (e *UsageError) NextStep() string { return e.Next }

// RefusalError is work kmx refused before creating a journal or sending a
// request. Its message says what to change.
type RefusalError struct {
	Msg  string
	Next string
}

func (e *RefusalError) Error() string { return e.Msg }

// NextStep is what to change (problem.Problem).
func (e *RefusalError) NextStep() string { return e.Next }

// FailureError reports findings or failed examples after the output was
// printed; it carries no text of its own beyond a summary.
type FailureError struct {
	Msg string
	// Exit, when set, is the exit code instead of ExitFailure: a command
	// over many files exits with the worst of them after printing each.
	Exit int
}

func (e *FailureError) Error() string { return e.Msg }

func usagef(next, format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...), Next: next}
}

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	var u *UsageError
	var r *RefusalError
	var f *FailureError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &f):
		if f.Exit != 0 {
			return f.Exit
		}
		return ExitFailure
	case errors.As(err, &u), errors.As(err, &r):
		return ExitRefusal
	}
	// Anything unexpected is reported as a refusal: nothing is claimed.
	return ExitRefusal
}
