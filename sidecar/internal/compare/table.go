package compare

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/kmxdev/kmx/sidecar/internal/english"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// WriteTable prints the comparison for a terminal: a header line, one row
// per example with a cell per column (verdict, k/N with trials, duration,
// tokens when reported) and the change against a baseline, the totals,
// each column's run (or refusal) and the label with the verdict.
func WriteTable(w io.Writer, res *Result) error { return WriteTableIn(w, res, problem.Flags) }

// WriteTableIn is WriteTable with its heading naming the comparison's
// command in words' terms (kmx test on the command line, Test in MCP).
func WriteTableIn(w io.Writer, res *Result, words problem.Words) error {
	p := &printer{w: w}
	p.linef("%s %s %s (%s)", words(problem.TestCmd, ""), res.Agent.Path, res.what(), Label)
	header := []string{"EXAMPLE"}
	for _, c := range res.Columns {
		header = append(header, c.Header())
	}
	changed := res.changedModels()
	for _, m := range changed {
		if len(changed) == 1 {
			header = append(header, "CHANGE")
		} else {
			header = append(header, "CHANGE "+m.String())
		}
	}
	rows := [][]string{header}
	for _, r := range res.Rows {
		line := []string{r.ID}
		for _, c := range r.Cells {
			line = append(line, CellText(c))
		}
		for _, ch := range r.Changes {
			line = append(line, ch.Change)
		}
		rows = append(rows, line)
	}
	widths := make([]int, len(header))
	for _, line := range rows {
		for i, s := range line {
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	for _, line := range rows {
		var b strings.Builder
		b.WriteString(" ")
		for i, s := range line {
			b.WriteString(" ")
			b.WriteString(s)
			if i < len(line)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s)+1))
			}
		}
		p.linef("%s", b.String())
	}
	p.linef("%s", res.totals())
	for _, c := range res.Columns {
		switch {
		case c.Refusal != nil:
			next := ""
			if c.Refusal.Next != "" {
				next = "; " + c.Refusal.Next
			}
			p.linef("%s: refused, nothing ran: %s%s", c.Header(), c.Refusal.Message, next)
		case c.RunID != "" && c.JournalPath != "":
			p.linef("%s: run %s · journal %s", c.Header(), c.RunID, c.JournalPath)
		case c.RunID != "":
			p.linef("%s: run %s", c.Header(), c.RunID)
		}
	}
	p.linef("%s: verdict %s (not deployment qualification)", Label, res.Verdict)
	return p.err
}

// what says what the comparison is over, for the header line.
func (res *Result) what() string {
	models := map[Model]bool{}
	var base *Baseline
	for _, c := range res.Columns {
		models[c.Model] = true
		if c.Baseline != nil {
			base = c.Baseline
		}
	}
	s := "on " + plural(len(models), "model")
	if len(models) == 1 {
		s = "on " + res.Columns[0].Model.String()
	}
	if base != nil {
		s += " against baseline " + base.Short()
	}
	return s
}

// changedModels are the models that have a change column, in column order.
func (res *Result) changedModels() []Model {
	if len(res.Rows) == 0 {
		return nil
	}
	var out []Model
	for _, ch := range res.Rows[0].Changes {
		out = append(out, ch.Model)
	}
	return out
}

// models counts the distinct models of the current columns.
func (res *Result) models() int {
	seen := map[Model]bool{}
	for _, c := range res.Columns {
		if c.Side != SideBaseline {
			seen[c.Model] = true
		}
	}
	return len(seen)
}

// totals is the one-line count of the current cells, and of the changes.
func (res *Result) totals() string {
	s := res.Summary
	parts := []string{fmt.Sprintf("%d pass", s.Pass), fmt.Sprintf("%d fail", s.Fail), fmt.Sprintf("%d unknown", s.Unknown)}
	if s.Refused > 0 {
		parts = append(parts, fmt.Sprintf("%d refused", s.Refused))
	}
	if s.Missing > 0 {
		parts = append(parts, fmt.Sprintf("%d missing", s.Missing))
	}
	if s.Flaky > 0 {
		parts = append(parts, fmt.Sprintf("%d flaky", s.Flaky))
	}
	line := fmt.Sprintf("%s × %s: %s", plural(len(res.Rows), "example"), plural(res.models(), "model"), strings.Join(parts, ", "))
	if c := res.Changes; c != nil {
		line += fmt.Sprintf(" · against the baseline: %d regressed, %d improved, %d unchanged", c.Regressed, c.Improved, c.Unchanged)
	}
	return line
}

// CellText is a cell as the table shows it: "PASS 0.4 ms", "FLAKY 3/5
// 1.2 s", "FAIL 80.0 ms · 120 tokens".
func CellText(c Cell) string {
	if c.Verdict == VerdictMissing {
		return "—"
	}
	word := strings.ToUpper(c.Verdict)
	if c.Flaky() {
		word = "FLAKY"
	}
	if c.Trials != nil {
		word += fmt.Sprintf(" %d/%d", c.Trials.Pass, c.Trials.N)
	}
	if c.Verdict == VerdictRefused {
		return word
	}
	s := word + " " + Duration(c.DurationMs)
	if c.Tokens != nil {
		s += " · " + plural(*c.Tokens, "token")
	}
	return s
}

// Duration is a duration as the table shows it.
func Duration(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	return fmt.Sprintf("%.1f ms", ms)
}

// plural is english.Plural, the one wording of a count every front shares.
func plural(n int, word string) string { return english.Plural(n, word) }

// printer writes lines and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) linef(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}
