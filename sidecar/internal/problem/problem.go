// Package problem is the one shape of a refusal-like error: what is wrong
// and the next step. Engine errors that a person must act on (a runner
// refusal, a route setting, an unsafe state folder, a journal that cannot
// be read) implement Problem; the CLI, the language server (JSON-RPC) and
// the MCP server render every one of them with Text, so the same problem
// reads the same on every front. It owns no state and decides nothing.
package problem

import (
	"errors"
	"io/fs"
	"regexp"
	"strings"
	"syscall"
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

// PathReason is the reason a file operation failed (no such file,
// permission denied, is a directory) without the operation and path that
// *fs.PathError adds: every front's message names the path itself, in its
// own words. Other errors are returned as they are.
func PathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

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
		return Message(err)
	}
	return WithoutStep(Message(err), next) + "\nnext: " + next
}

// StepFor names the next step for an engine error that carries none
// (NextStep is ""), so a front's "next:" line always names a step: what the
// system error inside it calls for (a full disk, a read-only state folder),
// else running again. kept says what the failure left as it was. The
// Sessions service runs behind gRPC, so the error may arrive as text only:
// the system's wording is matched too.
func StepFor(err error, kept string) string {
	msg := err.Error()
	switch {
	case errors.Is(err, syscall.ENOSPC) || strings.Contains(msg, "no space left on device") ||
		strings.Contains(msg, "database or disk is full"): // SQLite's SQLITE_FULL: the journal's disk filled up
		return "free space on the disk that holds the kmx state folder (or set KMX_HOME to a private folder on another disk), then run again; " + kept
	case strings.Contains(msg, "disk I/O error"): // SQLite's SQLITE_IOERR, which a full disk also gives
		return "check the disk that holds the kmx state folder: free space on it if it is full (or set KMX_HOME to a private folder on another disk), then run again; " + kept
	case errors.Is(err, syscall.EROFS) || strings.Contains(msg, "read-only file system") ||
		errors.Is(err, fs.ErrPermission) || strings.Contains(msg, "permission denied"):
		return "make the kmx state folder writable (or set KMX_HOME to a private folder you can write), then run again; " + kept
	}
	return "run the command again; if it fails the same way, report this message; " + kept
}

// rpcStatus is the envelope grpc-go puts around a status message.
var rpcStatus = regexp.MustCompile(`rpc error: code = [A-Za-z]+ desc = `)

// Message is err's text without gRPC status envelopes ("rpc error: code =
// Internal desc = …"): the Sessions service and the harness run in-process
// behind gRPC listeners, and a user is shown what went wrong, never the
// transport's wording of it.
func Message(err error) string {
	return rpcStatus.ReplaceAllString(err.Error(), "")
}

// Clean is err with Message's text (no gRPC status envelope), still
// wrapping err for errors.Is and errors.As: for an error that came back
// through the in-process gRPC listeners and goes on toward a user.
func Clean(err error) error {
	if err == nil {
		return nil
	}
	return cleaned{err}
}

type cleaned struct{ err error }

func (c cleaned) Error() string { return Message(c.err) }
func (c cleaned) Unwrap() error { return c.err }

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
