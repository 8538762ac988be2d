package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
)

// Capture statuses.
const (
	// CaptureSaved: the file was edited; Revision is the agent's new one.
	CaptureSaved = "saved"
	// CaptureEdit: the edit is returned (Edits) for the editor to apply as
	// one undoable WorkspaceEdit; nothing was written.
	CaptureEdit = "edit"
	// CaptureRefused: the file changed since the run started (or cannot
	// take the edit); it is untouched.
	CaptureRefused = "refused"
	// CaptureFailed: the save failed; the file is untouched.
	CaptureFailed = "failed"
)

// CaptureReport says what became of the run's pending recordings (`calls:
// []`) that a live call answered. It is absent when there was nothing to
// capture.
type CaptureReport struct {
	Status string `json:"status"`
	// Path is the file holding the recordings: the agent file, or its
	// sibling examples file.
	Path     string         `json:"path"`
	Captured []CapturedTool `json:"captured"`
	// Revision is the agent's revision after the edit (saved only). The
	// report's agent.revision stays the executed one: the run is evidence
	// for the bytes it ran, not for the edited file.
	Revision string `json:"revision,omitempty"`
	// Message and Next say why a capture was refused or failed, and what
	// to do.
	Message string `json:"message,omitempty"`
	Next    string `json:"next,omitempty"`
	// Edits is the edit to apply (status edit), against the text the run
	// started from.
	Edits []CaptureTextEdit `json:"edits,omitempty"`
}

// CapturedTool is one example's tool whose first live result is (to be)
// saved as its recording.
type CapturedTool struct {
	Example string `json:"example"`
	Tool    string `json:"tool"`
}

// CaptureTextEdit replaces Range of the file at Path with NewText.
type CaptureTextEdit struct {
	Path    string          `json:"path"`
	Range   agentfile.Range `json:"range"`
	NewText string          `json:"newText"`
}

// pendingCapture is one capture found in the finalized journal.
type pendingCapture struct {
	example, tool     string
	arguments, result string
	callsRange        agentfile.Range
}

// capture fills each pending recording that a live call of this run
// answered with that call's first successful result. It runs after the
// journal is finalized: the journal is reopened and verified (integrity
// and hash chain), each result is taken from it and must match what this
// invocation's executor itself observed. Then the file holding the
// examples is edited (or, for the editor, the edit is returned), only if
// it still holds exactly the bytes the run started from.
func capture(ctx context.Context, opts Options, plan *invocation.Plan, rep *Report, dir string) *CaptureReport {
	if !plan.CapturesLive() || plan.Agent == nil {
		return nil
	}
	holder := rep.Agent.Path
	if plan.Agent.ExamplesFile != "" {
		holder = agentfile.SiblingExamplesPath(rep.Agent.Path)
	}
	cr := &CaptureReport{Path: holder, Captured: []CapturedTool{}}
	caps, err := capturesFromJournal(ctx, plan, rep, dir)
	if err != nil {
		cr.Status, cr.Message = CaptureFailed, "the pending recordings were not captured: "+err.Error()
		cr.Next = "run again; the recordings stay pending (calls: [])"
		return cr
	}
	if len(caps) == 0 {
		return nil
	}
	for _, c := range caps {
		cr.Captured = append(cr.Captured, CapturedTool{Example: c.example, Tool: c.tool})
	}
	before, ok := plan.Parsed(holder)
	if !ok {
		cr.Status, cr.Message, cr.Next = CaptureFailed, "the run did not keep the text of "+filepath.Base(holder), "run again"
		return cr
	}
	after, edits, err := applyCaptures(before, caps)
	if err != nil {
		cr.Status, cr.Message = CaptureRefused, err.Error()
		cr.Next = "write the pending recording as `calls: []` on one line, or record the call by hand"
		return cr
	}
	revision, err := checkCaptured(rep.Agent.Path, holder, plan, after, caps)
	if err != nil {
		cr.Status, cr.Message, cr.Next = CaptureRefused, err.Error(), "record the call by hand"
		return cr
	}
	if opts.CaptureAsEdit {
		cr.Status = CaptureEdit
		for _, e := range edits {
			e.Path = holder
			cr.Edits = append(cr.Edits, e)
		}
		return cr
	}
	if err := writeIfUnchanged(holder, before, after); err != nil {
		var changed *changedError
		if errors.As(err, &changed) {
			cr.Status, cr.Message = CaptureRefused, filepath.Base(holder)+" changed since the run started; it was left untouched"
			cr.Next = "run again to capture into the current file"
			return cr
		}
		cr.Status, cr.Message, cr.Next = CaptureFailed, "saving the captured recording failed: "+err.Error(), "fix the problem and run again; the recordings stay pending"
		return cr
	}
	cr.Status, cr.Revision = CaptureSaved, revision
	return cr
}

// capturesFromJournal finds, for each verified example whose frozen tool
// set has a pending live tool, the first successful live result of that
// tool in the finalized, verified journal.
func capturesFromJournal(ctx context.Context, plan *invocation.Plan, rep *Report, dir string) ([]pendingCapture, error) {
	type want struct {
		ex       agentfile.Example
		sessions []string
	}
	var wants []want
	byID := map[string]agentfile.Example{}
	for _, ex := range plan.Selected {
		byID[ex.ID] = ex
	}
	for _, r := range rep.Examples {
		ex, ok := byID[r.ID]
		if r.AdHoc || !ok {
			continue
		}
		pending := false
		for _, t := range plan.Tools(r.ID) {
			pending = pending || (t.Pending && t.Source == localtools.SourceLive)
		}
		if !pending {
			continue
		}
		w := want{ex: ex}
		if len(r.TrialResults) > 0 {
			for _, tr := range r.TrialResults {
				if tr.Verified && tr.sessionID != "" {
					w.sessions = append(w.sessions, tr.sessionID)
				}
			}
		} else if r.Verified && r.sessionID != "" {
			w.sessions = append(w.sessions, r.sessionID)
		}
		if len(w.sessions) > 0 {
			wants = append(wants, w)
		}
	}
	if len(wants) == 0 {
		return nil, nil
	}
	j, err := journal.Open(ctx, dir, rep.RunID)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	if j.Status() != journal.StatusFinished {
		return nil, fmt.Errorf("the run's journal is %s, not finished", j.Status())
	}
	if err := j.Verify(ctx); err != nil {
		return nil, err
	}
	var out []pendingCapture
	for _, w := range wants {
		done := map[string]bool{}
		for _, sid := range w.sessions {
			recs, err := j.Records(ctx, sid)
			if err != nil {
				return nil, err
			}
			calls := map[int]journal.ToolCall{}
			for _, r := range recs {
				switch r.Kind {
				case journal.KindToolCall:
					var c journal.ToolCall
					if journal.Decode(r.Payload, &c) == nil {
						calls[c.Index] = c
					}
				case journal.KindToolResult:
					var res journal.ToolResult
					if journal.Decode(r.Payload, &res) != nil || res.Source != localtools.SourceLive || !res.Dispatched || done[res.Name] {
						continue
					}
					c, ok := calls[res.Index]
					if !ok || c.ID != res.ID || c.Name != res.Name {
						return nil, errors.New("the journal's live result has no matching call")
					}
					rec, ok := pendingRecording(w.ex, res.Name)
					if !ok {
						continue
					}
					if !plan.Observed(res.Name, c.Arguments, res.Result) {
						return nil, errors.New("the journaled live result is not what this run observed")
					}
					done[res.Name] = true
					out = append(out, pendingCapture{example: w.ex.ID, tool: res.Name, arguments: c.Arguments, result: res.Result, callsRange: rec.CallsRange})
				}
			}
		}
	}
	return out, nil
}

func pendingRecording(ex agentfile.Example, tool string) (agentfile.ToolRecording, bool) {
	for _, r := range ex.Tools {
		if r.Tool == tool && r.Pending {
			return r, true
		}
	}
	return agentfile.ToolRecording{}, false
}

// applyCaptures replaces each pending recording's `[]` with a one-call
// flow sequence, keeping every other byte.
func applyCaptures(src []byte, caps []pendingCapture) ([]byte, []CaptureTextEdit, error) {
	sorted := append([]pendingCapture(nil), caps...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].callsRange.Start.Offset > sorted[b].callsRange.Start.Offset })
	out := append([]byte(nil), src...)
	var edits []CaptureTextEdit
	for _, c := range sorted {
		r := c.callsRange
		if r.Start.Offset < 0 || r.End.Offset > len(src) || r.Start.Offset >= r.End.Offset || !emptyFlowSeq(src[r.Start.Offset:r.End.Offset]) {
			return nil, nil, fmt.Errorf("the pending recording of %s in example %q is not written as `calls: []`, so kmx cannot fill it in place", c.tool, c.example)
		}
		text, err := recordedCallText(c.arguments, c.result)
		if err != nil {
			return nil, nil, err
		}
		out = append(out[:r.Start.Offset:r.Start.Offset], append([]byte(text), out[r.End.Offset:]...)...)
		edits = append(edits, CaptureTextEdit{Range: r, NewText: text})
	}
	// Edits are reported in file order.
	for a, b := 0, len(edits)-1; a < b; a, b = a+1, b-1 {
		edits[a], edits[b] = edits[b], edits[a]
	}
	return out, edits, nil
}

// emptyFlowSeq reports whether b is `[`, blanks, `]`.
func emptyFlowSeq(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) >= 2 && b[0] == '[' && b[len(b)-1] == ']' && len(bytes.Trim(b[1:len(b)-1], " \t")) == 0
}

// recordedCallText is one recorded call as a YAML flow sequence of one
// JSON mapping: `[{"arguments": {...}, "result": {...}}]`. JSON is YAML, so
// the parser reads back exactly these values.
func recordedCallText(arguments, result string) (string, error) {
	var a, r bytes.Buffer
	if err := json.Compact(&a, []byte(arguments)); err != nil {
		return "", fmt.Errorf("the captured arguments are not JSON: %w", err)
	}
	if err := json.Compact(&r, []byte(result)); err != nil {
		return "", errors.New("the captured result is not JSON, so it cannot be a recording")
	}
	return `[{"arguments": ` + a.String() + `, "result": ` + r.String() + `}]`, nil
}

// checkCaptured parses the edited text as the agent (pair) and checks that
// it is valid, keeps every example, and that each captured recording now
// holds exactly the captured call. It returns the agent's new revision.
func checkCaptured(agentPath, holder string, plan *invocation.Plan, after []byte, caps []pendingCapture) (string, error) {
	// The texts the run parsed, with the holder's edited.
	text := func(p string) ([]byte, bool) {
		if p == holder {
			return after, true
		}
		return plan.Parsed(p)
	}
	read := func(p string) ([]byte, error) {
		if b, ok := text(p); ok {
			return b, nil
		}
		return nil, os.ErrNotExist
	}
	src, _ := text(agentPath)
	res, _, err := agentfile.ParseFile(agentPath, src, read)
	if err != nil || res.State != agentfile.Valid || res.Agent == nil {
		return "", errors.New("the file would not stay valid with the captured recording, so it was left untouched")
	}
	if len(res.Agent.Examples) != len(plan.Agent.Examples) {
		return "", errors.New("the edit would change the examples, so the file was left untouched")
	}
	for _, c := range caps {
		var got *agentfile.ToolRecording
		for _, ex := range res.Agent.Examples {
			if ex.ID != c.example {
				continue
			}
			for i := range ex.Tools {
				if ex.Tools[i].Tool == c.tool {
					got = &ex.Tools[i]
				}
			}
		}
		if got == nil || got.Pending || len(got.Calls) != 1 || !localtools.SameJSON(got.Calls[0].Arguments, c.arguments) || !localtools.SameJSON(got.Calls[0].Result, c.result) {
			return "", fmt.Errorf("the captured recording of %s in example %q would not read back as the live result, so the file was left untouched", c.tool, c.example)
		}
	}
	return res.Agent.Revision, nil
}

// changedError: the file no longer holds the bytes the run started from.
type changedError struct{}

func (*changedError) Error() string { return "the file changed since the run started" }

// writeIfUnchanged replaces path's content with after when it still holds
// exactly before: a private temporary file beside it, synced, given the
// file's mode, then renamed over it (a symbolic link is followed to its
// target, and stays a link). Nothing is written when the file changed.
func writeIfUnchanged(path string, before, after []byte) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	same := func() (bool, error) {
		cur, err := os.ReadFile(real)
		return bytes.Equal(cur, before), err
	}
	if ok, err := same(); err != nil {
		return err
	} else if !ok {
		return &changedError{}
	}
	tmp, err := os.CreateTemp(filepath.Dir(real), "."+filepath.Base(real)+".kmx-capture-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	cleanup := func() { _ = os.Remove(name) }
	_, werr := tmp.Write(after)
	if werr == nil {
		werr = tmp.Chmod(fi.Mode().Perm())
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		cleanup()
		return werr
	}
	// Last check right before the rename: an editor that saved meanwhile
	// keeps its bytes.
	if ok, err := same(); err != nil || !ok {
		cleanup()
		if err != nil {
			return err
		}
		return &changedError{}
	}
	if err := os.Rename(name, real); err != nil {
		cleanup()
		return err
	}
	return nil
}
