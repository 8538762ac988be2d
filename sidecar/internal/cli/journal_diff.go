package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/readback"
)

const journalDiffUsage = "kmx journal diff RUN_A RUN_B | RUN_OF_A_COMPARISON [--json]"

// runJournalDiff compares two retained runs, offline: both are replayed
// with zero model calls and nothing is judged. Exit 0 when every example is
// the same, 1 when any differs (like diff(1)), 2 when refused.
func runJournalDiff(ctx context.Context, env Env, args []string) error {
	flags := newFlagSet("journal diff")
	var asJSON bool
	flags.BoolVar(&asJSON, "json", false, "print the versioned JSON comparison (kmx.journal.diff/v2)")
	pos, err := parseInterspersed(flags, args, journalDiffUsage)
	if err != nil {
		return err
	}
	if len(pos) != 1 && len(pos) != 2 {
		return usagef(journalDiffUsage, "kmx journal diff: name two runs, the older first, or one run of a comparison (kmx journal list shows them)")
	}
	const cmd = "kmx journal diff"
	if err := checkRunIDs(cmd, pos...); err != nil {
		return err
	}
	none := &RefusalError{Msg: cmd + ": there are no retained runs: no run has been journaled in this state folder yet", Next: "run kmx test FILE twice first"}
	if len(pos) == 1 {
		return runComparisonDiff(ctx, env, cmd, none, pos[0], asJSON)
	}
	d, err := replayJournal(ctx, env, cmd, none, func(ctx context.Context, dir string) (*readback.RunDiff, error) {
		return readback.Diff(ctx, dir, pos[0], pos[1])
	})
	if err != nil {
		return err
	}
	if err := showReplay(env, asJSON, d, func(w io.Writer) { printDiff(w, d) }, d.LiveCalls); err != nil {
		return err
	}
	if d.Summary.Changed+d.Summary.OnlyA+d.Summary.OnlyB > 0 {
		return &FailureError{Msg: "runs differ"}
	}
	return nil
}

func printDiff(w io.Writer, d *readback.RunDiff) {
	fmt.Fprintf(w, "kmx journal diff (%s)\n", d.Label)
	for _, side := range []struct {
		name string
		r    readback.DiffRun
	}{{"A", d.A}, {"B", d.B}} {
		r := side.r
		fmt.Fprintf(w, "%s  %s · %s of %s · %s · revision %s", side.name, r.ID, clean(r.Command), clean(r.AgentID), r.Status, short(r.AgentRevision))
		switch {
		case r.SourceRun != "":
			fmt.Fprintf(w, " · re-grade of %s", r.SourceRun)
		case r.Baseline != nil && r.Baseline.Commit != "":
			fmt.Fprintf(w, " · instructions at %s (commit %s)", clean(r.Baseline.Rev), short(r.Baseline.Commit))
		case r.Baseline != nil:
			fmt.Fprint(w, " · no instructions (baseline none)")
		case !r.Verdicts:
			fmt.Fprint(w, " · no verdicts recorded: answers only")
		}
		if r.Trials > 1 {
			fmt.Fprintf(w, " · %d trials", r.Trials)
		}
		fmt.Fprintln(w)
	}
	if d.A.AgentID != d.B.AgentID {
		fmt.Fprintf(w, "note: the runs are of different agents (%s, %s)\n", clean(d.A.AgentID), clean(d.B.AgentID))
	}
	for _, ex := range d.Examples {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%-8s %s\n", strings.ToUpper(ex.Status), clean(ex.ID))
		printDiffSide(w, "A", ex.A)
		printDiffSide(w, "B", ex.B)
		for _, l := range ex.Lines {
			op := " "
			if l.Op != "=" {
				op = l.Op
			}
			fmt.Fprintf(w, "    %s %s\n", op, clean(l.Text))
		}
	}
	fmt.Fprintln(w)
	s := d.Summary
	fmt.Fprintf(w, "%d same, %d changed, %d only in A, %d only in B · live calls: %d\n", s.Same, s.Changed, s.OnlyA, s.OnlyB, d.LiveCalls)
}

func printDiffSide(w io.Writer, name string, s *readback.DiffSide) {
	if s == nil {
		fmt.Fprintf(w, "  %s  not in this run\n", name)
		return
	}
	// A multi-turn example has a row per script turn (every turn, those
	// not run included) per trial: name them "A turn 2" ("A#2 turn 1" with
	// trials) rather than as trials.
	script := s.ScriptTurns()
	for i, t := range s.Turns {
		label := name
		switch {
		case script > 1 && len(s.Verdicts) > 1:
			label = fmt.Sprintf("%s#%d turn %d", name, i/script+1, i%script+1)
		case script > 1:
			label = fmt.Sprintf("%s turn %d", name, i+1)
		case len(s.Turns) > 1:
			label = fmt.Sprintf("%s#%d", name, i+1)
		}
		verdict := "verdict not recorded"
		if t.Verdict != "" {
			verdict = strings.ToUpper(t.Verdict)
		}
		if t.State == "not sent" && t.Model.Model == "" {
			// A turn after one that stopped the script: nothing to show.
			fmt.Fprintf(w, "  %-4s %s · not sent\n", label, verdict)
			continue
		}
		dur := "duration not recorded"
		if t.DurationMs != nil {
			dur = fmt.Sprintf("%.1f ms", *t.DurationMs)
		}
		model := "no turn"
		if t.Model.Model != "" {
			model = fmt.Sprintf("model %s (%s)", clean(t.Model.Model), clean(t.Model.Route))
		}
		fmt.Fprintf(w, "  %-4s %s · %s · %s · %s\n", label, verdict, t.State, model, dur)
	}
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12] + "…"
	}
	return rev
}

// runComparisonDiff reads back the comparison run belongs to: its first
// column against each other one, answers side by side, offline.
func runComparisonDiff(ctx context.Context, env Env, cmd string, none *RefusalError, run string, asJSON bool) error {
	d, err := replayJournal(ctx, env, cmd, none, func(ctx context.Context, dir string) (*readback.ComparisonDiff, error) {
		return readback.DiffComparison(ctx, dir, run)
	})
	if err != nil {
		return err
	}
	err = showReplay(env, asJSON, d, func(w io.Writer) {
		kept := 0
		for _, r := range d.Runs {
			if r != "" {
				kept++
			}
		}
		fmt.Fprintf(w, "comparison %s: %d of %d runs retained\n", d.ID, kept, d.Columns)
		for i, rd := range d.Diffs {
			if i > 0 {
				fmt.Fprintln(w)
			}
			printDiff(w, rd)
		}
	}, d.LiveCalls)
	if err != nil {
		return err
	}
	for _, rd := range d.Diffs {
		if rd.Summary.Changed+rd.Summary.OnlyA+rd.Summary.OnlyB > 0 {
			return &FailureError{Msg: "runs differ"}
		}
	}
	return nil
}
