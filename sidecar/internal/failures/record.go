package failures

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// Schema versions the record file format; a record of any other schema is
// refused on load rather than guessed at.
const Schema = "kmx.eval-failures/v1"

// Bounds of the store. A subject keeps its newest MaxRecordsPerSubject
// records; one record holds at most MaxExamplesPerRecord non-pass examples
// and encodes to at most MaxRecordBytes.
const (
	MaxRecordsPerSubject = 10
	MaxExamplesPerRecord = 10
	MaxRecordBytes       = 64 << 10
	// MaxFieldRunes bounds each free-text field (Actual, Expected, the
	// messages); longer text is cut and ends with "…".
	MaxFieldRunes = 200
	// maxIDRunes bounds identifiers (example ID, assertion type, provider,
	// model); these are refused rather than cut, since a cut ID would name
	// a different example.
	maxIDRunes = 256
)

// Retention statuses Save returns; the runner reports them as
// retention.status.
const (
	StatusRetained    = "retained"
	StatusUnavailable = "unavailable"
)

// Selections of a Test invocation.
const (
	SelectionFull   = "full"
	SelectionSubset = "subset"
)

// Identity is the effective route and model of an agent or judge. Provider
// is the route name ("fake", "compatible", ...), never an endpoint.
type Identity struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// Assertion is one assertion's result as the judge reported it.
type Assertion struct {
	// Index is the assertion's zero-based position in the authored list.
	Index   int    `json:"index"`
	Type    string `json:"type"`
	Outcome string `json:"outcome"`
	// Expected is the operand, pattern or llmJudge pass mark.
	Expected string `json:"expected,omitempty"`
	// Actual is an excerpt of the answer or the judge's scores text. It is
	// content: Explain shows it only when asked.
	Actual string `json:"actual,omitempty"`
	// Scores are the llmJudge sample scores; a nil entry is a sample with
	// no score (inconclusive, malformed, unavailable or not sent). The type
	// matches judge.AssertionResult.Scores so the runner copies it as is.
	Scores    []*int `json:"scores,omitempty"`
	Threshold *int   `json:"threshold,omitempty"`
	Message   string `json:"message,omitempty"`
}

// Example is one non-pass example of the invocation.
type Example struct {
	ID      string `json:"id"`
	Verdict string `json:"verdict"`
	Message string `json:"message,omitempty"`
	// Deciding is the position in Assertions of the assertion that decided
	// the verdict, when one did.
	Deciding   *int        `json:"deciding,omitempty"`
	Assertions []Assertion `json:"assertions"`
}

// Record is one retained Test failure.
type Record struct {
	// Schema is Schema; Save fills it in when empty.
	Schema string `json:"schema"`
	// Subject is what Subject returned for the tested file, frozen before
	// any model send.
	Subject string `json:"subject"`
	// Revision is the lower-case hex SHA-256 of the exact source bytes
	// that were tested.
	Revision   string    `json:"revision"`
	RecordedAt time.Time `json:"recordedAt"`
	// Selection is SelectionFull or SelectionSubset.
	Selection string    `json:"selection"`
	Agent     Identity  `json:"agent"`
	Judge     *Identity `json:"judge,omitempty"`
	// Verdict is the file's verdict: fail, unknown or refused, never pass.
	Verdict string `json:"verdict"`
	// Examples are only the non-pass examples.
	Examples []Example `json:"examples"`
}

// nonPass reports whether v is a verdict a retained example or file may
// have. A pass is never retained: Explain would show it as a failure.
func nonPass(v string) bool { return v == "fail" || v == "unknown" || v == "refused" }

// normalize returns a copy of rec with defaults filled in and free text
// bounded, or an error saying what makes rec unfit to retain. Errors name
// fields, never quote their values, so nothing credential-shaped can leak
// through them.
func normalize(rec Record, now time.Time) (Record, error) {
	if rec.Schema == "" {
		rec.Schema = Schema
	}
	if rec.RecordedAt.IsZero() {
		rec.RecordedAt = now
	}
	rec.RecordedAt = rec.RecordedAt.UTC()
	if err := validate(rec); err != nil {
		return Record{}, err
	}
	if err := scanCredentials(rec); err != nil {
		return Record{}, err
	}
	out := rec
	out.Examples = make([]Example, len(rec.Examples))
	for i, ex := range rec.Examples {
		ex.Message = bound(ex.Message)
		as := make([]Assertion, len(ex.Assertions))
		for j, a := range ex.Assertions {
			a.Expected = bound(a.Expected)
			a.Actual = bound(a.Actual)
			a.Message = bound(a.Message)
			as[j] = a
		}
		ex.Assertions = as
		out.Examples[i] = ex
	}
	return out, nil
}

// validate checks the structure of a record, both before Save writes it and
// after Load reads it back.
func validate(rec Record) error {
	switch {
	case rec.Schema != Schema:
		return fmt.Errorf("schema is not %s, the only one this kmx reads", Schema)
	case rec.Subject == "" || !filepath.IsAbs(rec.Subject) || filepath.Clean(rec.Subject) != rec.Subject:
		return fmt.Errorf("subject is not a clean absolute path; pass what failures.Subject returned")
	case !isRevision(rec.Revision):
		return fmt.Errorf("revision is not a lower-case hex SHA-256 of the source")
	case rec.RecordedAt.IsZero():
		return fmt.Errorf("recordedAt is missing")
	case rec.Selection != SelectionFull && rec.Selection != SelectionSubset:
		return fmt.Errorf("selection is neither %q nor %q", SelectionFull, SelectionSubset)
	case !nonPass(rec.Verdict):
		return fmt.Errorf("the file verdict is not fail, unknown or refused; only a non-pass Test is retained")
	case len(rec.Examples) == 0:
		return fmt.Errorf("no non-pass examples: a Test with none is not retained")
	case len(rec.Examples) > MaxExamplesPerRecord:
		return fmt.Errorf("%d non-pass examples, more than the %d one record keeps; none were retained so that every reported example stays discoverable", len(rec.Examples), MaxExamplesPerRecord)
	}
	if err := checkIdentity("agent", &rec.Agent); err != nil {
		return err
	}
	if rec.Judge != nil {
		if err := checkIdentity("judge", rec.Judge); err != nil {
			return err
		}
	}
	seen := make(map[string]bool, len(rec.Examples))
	for i, ex := range rec.Examples {
		where := fmt.Sprintf("example %d", i+1)
		switch {
		case !isID(ex.ID):
			return fmt.Errorf("%s: its ID is empty, too long or not UTF-8", where)
		case seen[ex.ID]:
			return fmt.Errorf("%s: its ID repeats an earlier example's", where)
		case !nonPass(ex.Verdict):
			return fmt.Errorf("%s: its verdict is not fail, unknown or refused; only non-pass examples are retained", where)
		case ex.Deciding != nil && (*ex.Deciding < 0 || *ex.Deciding >= len(ex.Assertions)):
			return fmt.Errorf("%s: deciding assertion %d is not one of its %d assertions", where, *ex.Deciding, len(ex.Assertions))
		}
		seen[ex.ID] = true
		for j, a := range ex.Assertions {
			if a.Index < 0 || !isID(a.Type) || !isID(a.Outcome) {
				return fmt.Errorf("%s, assertion %d: index, type or outcome is missing or malformed", where, j+1)
			}
		}
	}
	return nil
}

func checkIdentity(what string, id *Identity) error {
	if !isID(id.Provider) || !isID(id.Model) {
		return fmt.Errorf("%s provider or model is empty, too long or not UTF-8", what)
	}
	return nil
}

// scanCredentials refuses a record with a credential-shaped value anywhere.
// The runner should never hand one over; this is the last line before disk.
func scanCredentials(rec Record) error {
	check := func(where, text string) error {
		if f := secrets.Scan(text); len(f) > 0 {
			return fmt.Errorf("%s contains a credential-shaped value (%s); nothing was retained", where, f[0].Shape)
		}
		return nil
	}
	top := []struct{ where, text string }{
		{"the subject", rec.Subject}, {"the agent provider", rec.Agent.Provider}, {"the agent model", rec.Agent.Model},
	}
	if rec.Judge != nil {
		top = append(top, struct{ where, text string }{"the judge provider", rec.Judge.Provider}, struct{ where, text string }{"the judge model", rec.Judge.Model})
	}
	for _, t := range top {
		if err := check(t.where, t.text); err != nil {
			return err
		}
	}
	for i, ex := range rec.Examples {
		for _, t := range []struct{ what, text string }{{"ID", ex.ID}, {"message", ex.Message}} {
			if err := check(fmt.Sprintf("example %d's %s", i+1, t.what), t.text); err != nil {
				return err
			}
		}
		for j, a := range ex.Assertions {
			for _, t := range []struct{ what, text string }{{"type", a.Type}, {"outcome", a.Outcome}, {"expected", a.Expected}, {"actual", a.Actual}, {"message", a.Message}} {
				if err := check(fmt.Sprintf("example %d, assertion %d's %s", i+1, j+1, t.what), t.text); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func isRevision(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isID(s string) bool {
	return s != "" && utf8.ValidString(s) && utf8.RuneCountInString(s) <= maxIDRunes
}

// bound makes s valid UTF-8 of at most MaxFieldRunes runes.
func bound(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= MaxFieldRunes {
		return s
	}
	r := []rune(s)
	return string(r[:MaxFieldRunes-1]) + "…"
}
