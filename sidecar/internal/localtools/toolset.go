package localtools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
	"github.com/kmxdev/kmx/sidecar/internal/vscodetools"
)

// Bounds of the kmx-local-tools-v1 harness (SPEC §9).
const (
	// MaxCalls is the largest batch the model's first response may request.
	MaxCalls = route.MaxToolCalls
	// MaxModelSends is the number of agent model sends a tool turn may make.
	MaxModelSends = 2
	// MaxArgumentBytes bounds one call's arguments (JSON text).
	MaxArgumentBytes = 8 << 10
	// MaxResultBytes bounds one call's result (text the model receives).
	MaxResultBytes = 32 << 10
	// MaxCallIDBytes bounds a call ID the model chose.
	MaxCallIDBytes = 128
	// MaxOfferedTools bounds the tools one example offers: at most 32
	// declared references, a tool set standing for its members.
	MaxOfferedTools = 128
)

// Fixed answers the model receives instead of a tool's output.
const (
	// UnavailableText answers a call of a tool with no recording matching
	// its arguments and no binding.
	UnavailableText = "This tool is not available in this test."
	// DisabledText answers a call of a tool kmx.yaml disables.
	DisabledText = "This tool is disabled for this test."
)

// Sources of a tool's answer. "disabled" is an offered source only: a
// Disabled call is not a dispatch, so it never appears in toolSources.
const (
	SourceLive        = "live"
	SourceRecorded    = "recorded"
	SourceUnavailable = "unavailable"
	SourceDisabled    = "disabled"
	// SourceWorkspace: the example's fixture workspace answers the call
	// inside its scratch copy (kmx-workspace-tools-v1 only; package
	// workspace). Like live, its result is read from the journal on replay,
	// never recomputed.
	SourceWorkspace = "workspace"
)

// RecordedCall is one saved call: arguments and result as JSON text.
type RecordedCall = journal.RecordedCall

// Tool is one declared tool as offered to one example's turn: frozen at run
// start, journaled with the session as it is (journal.OfferedTool, the one
// Go shape of a tool), and all that replay needs.
type Tool = journal.OfferedTool

// Call is one tool call the model requested.
type Call = route.ToolCall

// Answer is what one call got.
type Answer struct {
	Text   string
	Source string
	// Dispatched: an Enabled dispatch (counted in toolCalls). A Disabled
	// answer is not one.
	Dispatched bool
}

// ErrNeedsBinding is what Dispatch returns for a live-bound tool: live
// execution goes through the host's executor, not this package.
var ErrNeedsBinding = errors.New("the tool is bound to a live executor")

// ErrNeedsWorkspace is what Dispatch returns for a tool the example's
// workspace answers: the harness calls it in the scratch copy.
var ErrNeedsWorkspace = errors.New("the tool is answered by the example's workspace")

// Freeze builds the tool set of one example: every tool the declared
// references stand for (vscodetools.Expand: a set's members, a legacy name's
// tool, an MCP stub, or the name itself), in declaration order, each once,
// with its kmx.yaml state (stateOf) and the source
// that answers it. bound names the tools with a live binding. A recording
// keyed by a reference answers every tool that reference stands for; one
// keyed by a tool's own name answers it first. Recorded results are checked
// for credential shapes here, before anything is journaled.
func Freeze(settings Settings, recs []agentfile.ToolRecording, bound map[string]bool) ([]Tool, error) {
	refs := make([]string, 0, len(settings.States))
	for _, st := range settings.States {
		refs = append(refs, st.Name)
	}
	offers := vscodetools.Expand(refs)
	out := make([]Tool, 0, len(offers))
	for _, o := range offers {
		t := Tool{Name: o.Name, State: stateOf(settings, o), Source: SourceUnavailable}
		if o.Kind != vscodetools.KindOther || o.Function != o.Name {
			t.Function = o.Function
		}
		if o.Kind != vscodetools.KindOther {
			t.Description, t.Parameters, t.Table = o.Description, o.Schema, vscodetools.TableVersion
			if o.Reference != o.Name {
				t.Reference = o.Reference
			}
		}
		if r, ok := recordingFor(recs, t); ok {
			t.Pending = r.Pending
			for i, c := range r.Calls {
				if f := secrets.Scan(c.Result); len(f) > 0 {
					return nil, fmt.Errorf("the recorded result %d of tool %q holds a credential-shaped value (%s): remove it from the recording", i+1, r.Tool, f[0].Shape)
				}
				if f := secrets.Scan(c.Arguments); len(f) > 0 {
					return nil, fmt.Errorf("the recorded arguments %d of tool %q hold a credential-shaped value (%s): remove it from the recording", i+1, r.Tool, f[0].Shape)
				}
				if len(c.Result) > MaxResultBytes {
					return nil, fmt.Errorf("the recorded result %d of tool %q is %d bytes; the limit is 32 KiB: shorten it", i+1, r.Tool, len(c.Result))
				}
				t.Recorded = append(t.Recorded, RecordedCall{Arguments: c.Arguments, Result: c.Result})
			}
		}
		switch {
		case t.State == Disabled:
			t.Source = SourceDisabled
		case bound[t.Name]:
			t.Source = SourceLive
		case len(t.Recorded) > 0:
			t.Source = SourceRecorded
		}
		out = append(out, t)
	}
	return out, nil
}

// stateOf is the kmx.yaml state of an offered tool: Disabled when any
// declared reference standing for it is Disabled (`tools: [search,
// codebase]` with `codebase: Disabled` disables search/codebase, although
// `search` brought it in first), else the state of the reference that
// brought it in. Disabled wins, as it does over a recording or a binding.
func stateOf(settings Settings, o vscodetools.Offer) string {
	for _, st := range settings.States {
		if st.State == Disabled && vscodetools.Covers(st.Name, o.Name) {
			return Disabled
		}
	}
	return settings.State(o.Reference)
}

// recordingFor is the example's recording that answers t: one keyed by the
// tool's own name first, else one keyed by the reference that declares it.
func recordingFor(recs []agentfile.ToolRecording, t Tool) (agentfile.ToolRecording, bool) {
	for _, key := range []string{t.Name, t.Declared()} {
		for _, r := range recs {
			if r.Tool == key {
				return r, true
			}
		}
	}
	for _, r := range recs {
		if vscodetools.Covers(r.Tool, t.Name) {
			return r, true
		}
	}
	return agentfile.ToolRecording{}, false
}

// Find returns the tool the model calls by the function name fn.
func Find(set []Tool, fn string) (Tool, bool) {
	for _, t := range set {
		if t.FunctionName() == fn {
			return t, true
		}
	}
	return Tool{}, false
}

// Named returns the tool an agent file names by name: its canonical name,
// its function name, or a reference standing for it (the first such tool).
func Named(set []Tool, name string) (Tool, bool) {
	for _, t := range set {
		if t.Name == name || t.FunctionName() == name || t.Reference == name {
			return t, true
		}
	}
	for _, t := range set {
		if vscodetools.Covers(name, t.Name) {
			return t, true
		}
	}
	return Tool{}, false
}

// ValidateBatch checks a first response's whole batch before its first call:
// at most five calls, unique non-empty IDs, offered names only, and
// arguments that are a JSON object of at most 8 KiB. Any problem refuses
// the whole batch.
func ValidateBatch(calls []Call, set []Tool) error {
	if len(calls) > MaxCalls {
		return fmt.Errorf("the model requested %d tool calls in one batch; at most %d are allowed", len(calls), MaxCalls)
	}
	ids := make(map[string]bool, len(calls))
	for i, c := range calls {
		n := i + 1
		switch {
		case c.ID == "":
			return fmt.Errorf("tool call %d has no call ID", n)
		case len(c.ID) > MaxCallIDBytes:
			return fmt.Errorf("tool call %d has a call ID over %d bytes", n, MaxCallIDBytes)
		case ids[c.ID]:
			return fmt.Errorf("tool call %d repeats a call ID of the same batch", n)
		}
		ids[c.ID] = true
		if _, ok := Find(set, c.Name); !ok {
			return fmt.Errorf("tool call %d names a tool that was not offered", n)
		}
		if len(c.Arguments) > MaxArgumentBytes {
			return fmt.Errorf("tool call %d has %d bytes of arguments; the limit is %d", n, len(c.Arguments), MaxArgumentBytes)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.Arguments), &obj); err != nil || obj == nil {
			return fmt.Errorf("tool call %d has arguments that are not a JSON object", n)
		}
	}
	return nil
}

// Dispatch answers one validated call offline: Disabled without calling
// anything, a recorded call whose arguments equal (as JSON) the call's, else
// the unavailable stub. A live-bound tool without a matching recording
// returns ErrNeedsBinding for the host's executor.
func Dispatch(t Tool, arguments string) (Answer, error) {
	if t.State == Disabled {
		return Answer{Text: DisabledText, Source: SourceDisabled}, nil
	}
	if t.Source == SourceWorkspace {
		return Answer{}, ErrNeedsWorkspace
	}
	for _, rc := range t.Recorded {
		if SameJSON(rc.Arguments, arguments) {
			return Answer{Text: rc.Result, Source: SourceRecorded, Dispatched: true}, nil
		}
	}
	if t.Source == SourceLive {
		return Answer{}, ErrNeedsBinding
	}
	return Answer{Text: UnavailableText, Source: SourceUnavailable, Dispatched: true}, nil
}

// SameJSON reports whether a and b are equal as JSON values (object key
// order and whitespace do not matter; numbers compare as written).
func SameJSON(a, b string) bool {
	ca, errA := canonical(a)
	cb, errB := canonical(b)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}

func canonical(s string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	return json.Marshal(v)
}

// CheckResult bounds one result before it reaches the model or the journal.
func CheckResult(text string) error {
	if len(text) > MaxResultBytes {
		return fmt.Errorf("a tool result is %d bytes; the limit is %d", len(text), MaxResultBytes)
	}
	if f := secrets.Scan(text); len(f) > 0 {
		return fmt.Errorf("a tool result holds a credential-shaped value (%s)", f[0].Shape)
	}
	return nil
}
