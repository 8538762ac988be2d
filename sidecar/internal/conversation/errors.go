package conversation

import (
	"errors"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// Refusal codes: what a front can act on (the chat panel offers Discard
// for CodeUnfinished, for example).
const (
	// CodeBusy: another turn of this conversation is running.
	CodeBusy = "busy"
	// CodeUnfinished: the last turn has no recorded outcome.
	CodeUnfinished = "unfinished"
	// CodeIdentity: the turn was asked for on another model or route.
	CodeIdentity = "identity"
	// CodeIdentityReply: the reply named another model than the history's.
	CodeIdentityReply = "identity-reply"
	// CodeIdentityHistory: the history's own turns name two identities.
	CodeIdentityHistory = "identity-history"
	// CodeDivergence: the history does not replay (the journal changed).
	CodeDivergence = "divergence"
	// CodeInvalid: bad input (message, ID, file, state folder).
	CodeInvalid = "invalid"
)

// Refusal is a conversation operation kmx refused. Msg says what is wrong,
// Next what to do; nothing was sent and, except for CodeIdentityReply (the
// reply had already arrived and was recorded as refused), nothing was
// appended to the history.
type Refusal struct {
	Code string
	Msg  string
	Next string
	// Turn is the turn concerned, when there is one.
	Turn int
	// step, when set, is Next in each front's words (problem.Worded);
	// Next is its command line wording.
	step problem.Sentence
}

// MessageIn is Msg (problem.Worded): a conversation's messages name no
// setting.
func (r *Refusal) MessageIn(problem.Words) string { return r.Msg }

// NextStepIn is Next in w's words (problem.Worded).
func (r *Refusal) NextStepIn(w problem.Words) string {
	if r.step != nil {
		return r.step(w)
	}
	return r.Next
}

// worded gives r a next step in each front's words.
func (r *Refusal) worded(step problem.Sentence) *Refusal {
	r.step, r.Next = step, step(problem.Flags)
	return r
}

// clearOrAnother is the next step of a conversation that cannot be
// opened: clear it, or use another one.
func clearOrAnother(w problem.Words) string {
	if c := w(problem.Clear, ""); c != "" {
		return "clear the conversation (kmx chat FILE " + c + ") or use another " + w(problem.Conversation, "ID")
	}
	return "use another " + w(problem.Conversation, "ID") + ", or clear this one in kmx's chat panel in VS Code"
}

func (r *Refusal) Error() string { return r.Msg }

// NextStep is what to do (problem.Problem).
func (r *Refusal) NextStep() string { return r.Next }

// AsRefusal reports whether err is a Refusal.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

func refusef(next, format string, args ...any) *Refusal {
	return &Refusal{Code: CodeInvalid, Msg: fmt.Sprintf(format, args...), Next: next}
}

func busy(id string) *Refusal {
	return &Refusal{Code: CodeBusy,
		Msg:  fmt.Sprintf("conversation %q is busy: a turn is running (in this window or another process)", id),
		Next: "wait for the turn to end, or cancel it, then send again"}
}

func unfinished(id string, turn int) *Refusal {
	return (&Refusal{Code: CodeUnfinished, Turn: turn,
		Msg: fmt.Sprintf("conversation %q cannot continue: turn %d has no recorded outcome (its process ended mid-turn), and kmx never re-sends a turn", id, turn),
	}).worded(func(w problem.Words) string {
		if d := w(problem.Discard, ""); d != "" {
			return "discard the unfinished turn (kmx chat FILE " + d + Flag(id) + ", or Discard in the chat panel), then send again"
		}
		return "discard the unfinished turn (Discard in kmx's chat panel in VS Code), then send again, or use another " + w(problem.Conversation, "ID")
	})
}

// Flag is the --conversation flag that names conversation id on a kmx chat
// command line, with a leading space, or "" for the default conversation:
// a hint run as printed acts on the conversation it is about.
func Flag(id string) string {
	if id == "" || id == DefaultID {
		return ""
	}
	return " --conversation " + id
}

func identityBefore(recorded, requested route.Identity) *Refusal {
	return (&Refusal{Code: CodeIdentity,
		Msg: fmt.Sprintf("this conversation is on model %q (route %q); the turn asked for %q (route %q), and a conversation never changes model",
			recorded.Model, recorded.Route, requested.Model, requested.Route),
	}).worded(func(w problem.Words) string {
		return fmt.Sprintf("send with model %q on route %q, or start another conversation (%s) or clear this one", recorded.Model, recorded.Route, w(problem.Conversation, "ID"))
	})
}

func identityReply(turn int, recorded route.Identity, replied string) *Refusal {
	return &Refusal{Code: CodeIdentityReply, Turn: turn,
		Msg: fmt.Sprintf("turn %d was refused after it: the reply named model %q, not the conversation's %q; it is kept out of the history",
			turn, replied, recorded.Model),
		Next: "check the endpoint serves exactly the conversation's model"}
}

func identityHistory(a, b route.Identity, turn int) *Refusal {
	return (&Refusal{Code: CodeIdentityHistory, Turn: turn,
		Msg: fmt.Sprintf("this conversation cannot be opened: its turns name two models (%q on %q, and %q on %q at turn %d)",
			a.Model, a.Route, b.Model, b.Route, turn),
	}).worded(clearOrAnother)
}

func divergence(turn int, reason string) *Refusal {
	msg := fmt.Sprintf("this conversation cannot be opened: its history does not replay (%s)", reason)
	if turn > 0 {
		msg = fmt.Sprintf("this conversation cannot be opened: turn %d of its history does not replay (%s)", turn, reason)
	}
	return (&Refusal{Code: CodeDivergence, Turn: turn, Msg: msg}).worded(func(w problem.Words) string {
		return "the journal changed since it was written: " + clearOrAnother(w)
	})
}
