package compare

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the short summary a CI step appends to its job
// summary or posts on a pull request: the totals, then the examples that
// need a look (regressions first, then failures, flaky, unknown and
// refused cells), each named by its example ID and model, then the whole
// grid folded away. It holds IDs, verdicts, counts, model names and
// revisions only: no answer, input, argument, message, endpoint, path
// outside the repository or credential, whatever the runs held.
func WriteMarkdown(w io.Writer, res *Result) error {
	p := &printer{w: w}
	p.linef("### kmx test `%s`: %s (%s)", code(res.Agent.ID), res.Verdict, Label)
	p.linef("")
	p.linef("%s", mdTotals(res))
	p.linef("")
	lists := []struct {
		title string
		items []string
	}{
		{"Regressed", res.regressions()},
		{"Failed", res.cellsWhere(func(c Cell) bool { return c.Verdict == VerdictFail && !c.Flaky() })},
		{"Flaky", res.cellsWhere(Cell.Flaky)},
		{"Unknown", res.cellsWhere(func(c Cell) bool { return c.Verdict == VerdictUnknown && !c.Flaky() })},
		{"Refused or missing", res.cellsWhere(func(c Cell) bool { return c.Verdict == VerdictRefused || c.Verdict == VerdictMissing })},
		{"Refused before any example ran", res.refusedWithoutRows()},
	}
	listed := false
	for _, l := range lists {
		if len(l.items) == 0 {
			continue
		}
		listed = true
		p.linef("**%s (%d)**", l.title, len(l.items))
		p.linef("")
		for _, it := range l.items {
			p.linef("- %s", it)
		}
		p.linef("")
	}
	switch {
	case listed:
	case res.Verdict == VerdictPass:
		p.linef("Every example passed on every model.")
		p.linef("")
	default:
		p.linef("No example ran.")
		p.linef("")
	}
	if len(res.Rows) > 0 {
		res.writeGrid(p)
	}
	var runs []string
	for _, c := range res.Columns {
		if c.RunID != "" {
			runs = append(runs, fmt.Sprintf("%s `%s`", cellEscape(c.Header()), code(c.RunID)))
		}
	}
	if len(runs) > 0 {
		p.linef("Runs (replay offline with `kmx journal inspect RUN`): %s.", strings.Join(runs, "; "))
		p.linef("")
	}
	p.linef("_%s: not deployment qualification._", Label)
	return p.err
}

// writeGrid writes the whole grid, folded in a <details> block.
func (res *Result) writeGrid(p *printer) {
	p.linef("<details><summary>All examples</summary>")
	p.linef("")
	header := []string{"example"}
	for _, c := range res.Columns {
		header = append(header, cellEscape(c.Header()))
	}
	changed := res.changedModels()
	for _, m := range changed {
		if len(changed) == 1 {
			header = append(header, "change")
		} else {
			header = append(header, "change "+cellEscape(m.String()))
		}
	}
	p.linef("| %s |", strings.Join(header, " | "))
	p.linef("|%s", strings.Repeat(" --- |", len(header)))
	for _, r := range res.Rows {
		line := []string{"`" + code(r.ID) + "`"}
		for _, c := range r.Cells {
			line = append(line, mdCell(c))
		}
		for _, ch := range r.Changes {
			line = append(line, ch.Change)
		}
		p.linef("| %s |", strings.Join(line, " | "))
	}
	p.linef("")
	p.linef("</details>")
	p.linef("")
}

func mdTotals(res *Result) string {
	s := res.Summary
	line := fmt.Sprintf("%s × %s: **%d pass**, %d fail, %d unknown", plural(len(res.Rows), "example"), plural(res.models(), "model"), s.Pass, s.Fail, s.Unknown)
	if s.Refused > 0 {
		line += fmt.Sprintf(", %d refused", s.Refused)
	}
	if s.Missing > 0 {
		line += fmt.Sprintf(", %d missing", s.Missing)
	}
	if s.Flaky > 0 {
		line += fmt.Sprintf(" (%d flaky)", s.Flaky)
	}
	if c := res.Changes; c != nil {
		line += fmt.Sprintf(" · against baseline %s: **%d regressed**, %d improved, %d unchanged", cellEscape(res.baseline().Short()), c.Regressed, c.Improved, c.Unchanged)
	}
	return line + "."
}

func (res *Result) baseline() *Baseline {
	for _, c := range res.Columns {
		if c.Baseline != nil {
			return c.Baseline
		}
	}
	return nil
}

// refusedWithoutRows names each refused column when no column read the
// examples (every model refused before the file was tested), so the
// summary says what did not run rather than nothing. Not the refusal's
// words: the job log has them, and a summary holds no message.
func (res *Result) refusedWithoutRows() []string {
	if len(res.Rows) > 0 {
		return nil
	}
	var out []string
	for _, c := range res.Columns {
		if c.Refusal != nil {
			out = append(out, cellEscape(c.Header())+": refused, nothing ran (the job log says why)")
		}
	}
	return out
}

// regressions names every regressed example, with its model and verdicts.
func (res *Result) regressions() []string {
	var out []string
	for _, r := range res.Rows {
		for _, ch := range r.Changes {
			if ch.Change == Regressed {
				out = append(out, fmt.Sprintf("`%s` on %s: %s at the baseline, %s now", code(r.ID), cellEscape(ch.Model.String()), ch.From, ch.To))
			}
		}
	}
	return out
}

// regressedOn reports whether r regressed on model m (it is then named
// under Regressed, and not again).
func regressedOn(r Row, m Model) bool {
	for _, ch := range r.Changes {
		if ch.Model == m && ch.Change == Regressed {
			return true
		}
	}
	return false
}

// cellsWhere names every current cell that matches and did not regress,
// with its model.
func (res *Result) cellsWhere(match func(Cell) bool) []string {
	var out []string
	for _, r := range res.Rows {
		for i, c := range r.Cells {
			col := res.Columns[i]
			if col.Side == SideBaseline || !match(c) || regressedOn(r, col.Model) {
				continue
			}
			item := fmt.Sprintf("`%s` on %s", code(r.ID), cellEscape(col.Model.String()))
			if c.Trials != nil {
				item += fmt.Sprintf(": %d/%d passed (%d fail, %d unknown)", c.Trials.Pass, c.Trials.N, c.Trials.Fail, c.Trials.Unknown)
			}
			out = append(out, item)
		}
	}
	return out
}

func mdCell(c Cell) string {
	if c.Verdict == VerdictMissing {
		return "—"
	}
	s := c.Verdict
	if c.Flaky() {
		s = "flaky"
	}
	if c.Trials != nil {
		s += fmt.Sprintf(" %d/%d", c.Trials.Pass, c.Trials.N)
	}
	if c.Verdict != VerdictRefused {
		s += " · " + Duration(c.DurationMs)
	}
	if c.Tokens != nil {
		s += " · " + plural(*c.Tokens, "token")
	}
	return s
}

// cellEscape keeps a free-form name (a model's) from breaking a table or
// starting Markdown of its own: pipes, backticks, brackets, angle
// brackets, emphasis and line breaks are escaped or flattened.
func cellEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		case '|', '`', '*', '_', '[', ']', '<', '>', '\\', '#', '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// code is text for inside backticks: example and agent IDs and run IDs
// never hold a backtick or a line break, but a backtick would end the
// span, so one is dropped rather than trusted.
func code(s string) string {
	return strings.NewReplacer("`", "", "\n", " ", "\r", " ", "|", "\\|").Replace(s)
}
