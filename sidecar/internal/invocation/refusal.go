package invocation

import (
	"errors"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// Refusal is work refused before any journal file exists or any request is
// sent. Msg says what is wrong, Next what to change.
type Refusal struct {
	Msg         string
	Next        string
	Diagnostics []agentfile.Diagnostic
	// At is the source range that causes the refusal, when one does (a
	// tool assertion, an llmJudge with no judge route); Preflight puts
	// its diagnostic there.
	At *agentfile.Range `json:"-"`
	// Code is the diagnostic code Preflight shows it with when it is not
	// CodeRefusal (CodeSettings for an unusable kmx.yaml).
	Code string `json:"-"`
	// NoExamples: the file has no examples to run. A command over several
	// files reports such a file as skipped; one named file is refused.
	NoExamples bool `json:"-"`
	// say and step, when set, word Msg and Next for each front (RefuseIn):
	// Msg and Next are their command line wording.
	say, step problem.Sentence
}

// CodeSettings is the diagnostic code of an unusable kmx.yaml: the
// language server shows it on kmx.yaml and on the agent file's tools.
const CodeSettings = "kmx-yaml"

func (r *Refusal) Error() string { return r.Msg }

// NextStep is what to change (problem.Problem).
func (r *Refusal) NextStep() string { return r.Next }

// MessageIn is Msg in w's words (problem.Worded).
func (r *Refusal) MessageIn(w problem.Words) string {
	if r.say != nil {
		return r.say(w)
	}
	return r.Msg
}

// NextStepIn is Next in w's words (problem.Worded).
func (r *Refusal) NextStepIn(w problem.Words) string {
	if r.step != nil {
		return r.step(w)
	}
	return r.Next
}

// Refuse is a Refusal saying what is wrong (format, args) and what to
// change (next).
func Refuse(next, format string, args ...any) *Refusal {
	return &Refusal{Msg: fmt.Sprintf(format, args...), Next: next}
}

// RefuseIn is a Refusal whose next step (and message) name settings, so
// that each front words them (problem.Words): the command line's flags,
// MCP's arguments. A nil msg is the plain message (format, args).
func RefuseIn(next, msg problem.Sentence, format string, args ...any) *Refusal {
	if msg == nil {
		msg = problem.Plain(fmt.Sprintf(format, args...))
	}
	return &Refusal{Msg: msg(problem.Flags), Next: next(problem.Flags), say: msg, step: next}
}

// refuseAt is refuse with the range that causes the refusal.
func refuseAt(at agentfile.Range, next, format string, args ...any) *Refusal {
	r := Refuse(next, format, args...)
	r.At = &at
	return r
}

// refuseNear is refuseAt when the range is known, else refuse.
func refuseNear(at *agentfile.Range, next, format string, args ...any) *Refusal {
	r := Refuse(next, format, args...)
	r.At = at
	return r
}

// refusalAt gives a Refusal without a range the range at; other errors
// pass through.
func refusalAt(err error, at agentfile.Range) error {
	if r, ok := AsRefusal(err); ok && r.At == nil {
		r.At = &at
	}
	return err
}

// AsRefusal reports whether err is a Refusal.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// fileRefusal turns a file that is not Valid into a refusal that lists its
// blocking diagnostics (errors, or the unfinished constructs).
func fileRefusal(path string, res agentfile.Result) *Refusal {
	var blocking []agentfile.Diagnostic
	for _, d := range res.Diagnostics {
		if d.Severity == agentfile.SeverityError || (res.State == agentfile.Unfinished && d.Code == agentfile.CodeUnfinished) {
			blocking = append(blocking, d)
		}
	}
	first := ""
	if len(blocking) > 0 {
		d := blocking[0]
		where := ""
		if d.File != "" {
			where = d.File + ":"
		}
		first = fmt.Sprintf(": %s%d:%d %s %s", where, d.Range.Start.Line+1, d.Range.Start.Character+1, d.Code, d.Message)
	}
	// A front with no kmx check (MCP) lists the blocking diagnostics with
	// the refusal itself.
	if res.State == agentfile.Unfinished {
		r := RefuseIn(func(w problem.Words) string {
			if c := w(problem.CheckCmd, ""); c != "" {
				return "finish the construct the file ends in, then run again (" + c + " shows where)"
			}
			return "finish the construct the file ends in (the diagnostics listed show where), then try again"
		}, nil, "%s is still being written%s", path, first)
		r.Diagnostics = blocking
		return r
	}
	r := RefuseIn(func(w problem.Words) string {
		if c := w(problem.CheckCmd, path); c != "" {
			return fmt.Sprintf("fix the errors '%s' lists, then run again", c)
		}
		return "fix the errors listed, then try again"
	}, nil, "%s has %d error(s)%s", path, len(blocking), first)
	r.Diagnostics = blocking
	return r
}
