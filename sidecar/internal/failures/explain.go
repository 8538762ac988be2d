package failures

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// ExplainSchema versions the Explanation JSON (kmx test explain --json and
// the editor's Explain Last Test Failure).
const ExplainSchema = "kmx.explain/v1"

// Label is on every Explanation: it is a local preview diagnostic, not a
// test result.
const Label = "local preview"

// Relations of a record to the file's current bytes.
const (
	// Current: the record's revision is the SHA-256 of the current bytes.
	Current = "current"
	// Historical: the file changed since (or is gone); the record is
	// history and says nothing about the current text.
	Historical = "historical"
)

// Explanation is what Explain shows for one agent file: its retained
// failure records, newest first, each marked current or historical.
type Explanation struct {
	Schema string `json:"schema"`
	Label  string `json:"label"`
	// File is the path as given; Subject is what it resolved to.
	File    string `json:"file"`
	Subject string `json:"subject"`
	// CurrentRevision is the SHA-256 of the current bytes; empty when the
	// file no longer exists.
	CurrentRevision string `json:"currentRevision,omitempty"`
	// ContentShown says whether answer excerpts (Actual) are included.
	ContentShown bool              `json:"contentShown"`
	Records      []ExplainedRecord `json:"records"`
	Corrupt      []CorruptRecord   `json:"corrupt,omitempty"`
}

// ExplainedRecord is one retained record as Explain presents it.
type ExplainedRecord struct {
	RecordedAt time.Time `json:"recordedAt"`
	Revision   string    `json:"revision"`
	// Relation is Current or Historical; Note says it in words.
	Relation  string             `json:"relation"`
	Note      string             `json:"note"`
	Selection string             `json:"selection"`
	Agent     Identity           `json:"agent"`
	Judge     *Identity          `json:"judge,omitempty"`
	Verdict   string             `json:"verdict"`
	Examples  []ExplainedExample `json:"examples"`
}

// ExplainedExample is one non-pass example with its deciding assertion
// picked out.
type ExplainedExample struct {
	ID      string `json:"id"`
	Verdict string `json:"verdict"`
	Message string `json:"message,omitempty"`
	// Deciding is the assertion that decided the verdict, when one did;
	// it is also in Assertions.
	Deciding   *Assertion  `json:"deciding,omitempty"`
	Assertions []Assertion `json:"assertions"`
	// ContentWithheld is set when an assertion had an answer excerpt that
	// was left out because content was not asked for.
	ContentWithheld bool `json:"contentWithheld,omitempty"`
}

// Explain reads the retained failures of the agent file at path offline: no
// model, provider, credential, config or journal is touched, and nothing is
// created. current is the file's bytes now, or nil when it no longer exists;
// a record whose revision is not the SHA-256 of current is marked
// Historical, never attributed to the current text. Answer excerpts are
// included only when showContent is true.
//
// Unreadable records do not hide readable ones: they are listed in
// Corrupt. An unsafe store is refused with *state.UnsafeError.
func Explain(stateRoot, path string, current []byte, showContent bool) (Explanation, error) {
	subject, err := Subject(path)
	if err != nil {
		return Explanation{}, err
	}
	exp := Explanation{Schema: ExplainSchema, Label: Label, File: path, Subject: subject, ContentShown: showContent, Records: []ExplainedRecord{}}
	if current != nil {
		exp.CurrentRevision = currentRevision(path, current)
	}
	recs, err := Load(stateRoot, subject)
	var corrupt *CorruptError
	switch {
	case errors.As(err, &corrupt):
		exp.Corrupt = corrupt.Records
	case err != nil:
		return Explanation{}, err
	}
	for _, r := range recs {
		exp.Records = append(exp.Records, explainRecord(r, exp.CurrentRevision, current != nil, showContent))
	}
	return exp, nil
}

func explainRecord(r Record, currentRev string, exists, showContent bool) ExplainedRecord {
	er := ExplainedRecord{
		RecordedAt: r.RecordedAt, Revision: r.Revision, Selection: r.Selection,
		Agent: r.Agent, Judge: r.Judge, Verdict: r.Verdict,
		Examples: make([]ExplainedExample, 0, len(r.Examples)),
	}
	switch {
	case exists && r.Revision == currentRev:
		er.Relation = Current
		er.Note = "recorded for the current text (revision " + ShortRevision(r.Revision) + ")"
	case !exists:
		er.Relation = Historical
		er.Note = "recorded for revision " + ShortRevision(r.Revision) + "; the file no longer exists: this is history"
	default:
		er.Relation = Historical
		er.Note = "recorded for revision " + ShortRevision(r.Revision) + "; the file has changed since: this is history, not about the current text"
	}
	for _, ex := range r.Examples {
		ee := ExplainedExample{ID: ex.ID, Verdict: ex.Verdict, Message: ex.Message, Assertions: make([]Assertion, len(ex.Assertions))}
		for i, a := range ex.Assertions {
			if !showContent && a.Actual != "" {
				a.Actual = ""
				ee.ContentWithheld = true
			}
			ee.Assertions[i] = a
		}
		if ex.Deciding != nil {
			d := ee.Assertions[*ex.Deciding]
			ee.Deciding = &d
		}
		er.Examples = append(er.Examples, ee)
	}
	return er
}

// ShortRevision is the first 12 hex digits of a revision followed by "…",
// enough to tell revisions apart in human output.
func ShortRevision(rev string) string {
	if len(rev) <= 12 {
		return rev
	}
	return rev[:12] + "…"
}

// currentRevision is the agent's revision now: the SHA-256 of its bytes,
// or, with a sibling examples file beside it, the revision of the pair
// (agentfile.PairRevision), as the runner records it.
func currentRevision(path string, current []byte) string {
	if sibling := agentfile.SiblingExamplesPath(path); sibling != "" {
		if examples, err := os.ReadFile(sibling); err == nil {
			return agentfile.PairRevision(current, examples)
		}
	}
	sum := sha256.Sum256(current)
	return hex.EncodeToString(sum[:])
}

// ExplainFile is Explain for an agent file on disk, as kmx test explain and
// the MCP Explain tool read it: records kept for file (the path as the user
// named it), compared with the current text read from readFrom (where the
// front resolved file to; "" reads file itself). gone says the file no
// longer exists: its records can still be shown, all as history. Every
// error says what is wrong and what to change (problem.NextStep); the
// fronts only prefix and render it.
func ExplainFile(stateRoot, file, readFrom string, showContent bool) (exp Explanation, gone bool, err error) {
	if readFrom == "" {
		readFrom = file
	}
	current, err := agentfile.ReadFile(readFrom)
	var tooLarge *agentfile.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return Explanation{}, false, problem.Wrap(err, tooLarge.NextStep())
	case errors.Is(err, fs.ErrNotExist):
		current, gone = nil, true
	case err != nil:
		return Explanation{}, false, problem.New(fmt.Sprintf("cannot read %s: %v", file, problem.PathReason(err)), "check the path; kmx reads *.agent.md files")
	case current == nil:
		current = []byte{}
	}
	exp, err = Explain(stateRoot, file, current, showContent)
	if err != nil {
		var unsafe *state.UnsafeError
		if errors.As(err, &unsafe) {
			return Explanation{}, false, problem.Wrap(unsafe, unsafe.Fix)
		}
		return Explanation{}, false, problem.New(fmt.Sprintf("%s: %v", file, err), "check the path of the agent file")
	}
	return exp, gone, nil
}
