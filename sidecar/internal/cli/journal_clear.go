package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// journalCleared is the JSON of kmx journal clear.
type journalCleared struct {
	Schema  string   `json:"schema"`
	Label   string   `json:"label"`
	Dir     string   `json:"dir"`
	Removed []string `json:"removed"`
	// Kept are runs that are still executing; they were not removed.
	Kept []string `json:"kept"`
}

func runJournalClear(env Env, args []string) error {
	flags := newFlagSet("journal clear")
	var asJSON bool
	flags.BoolVar(&asJSON, "json", false, "print the versioned JSON result")
	pos, err := parseInterspersed(flags, args, journalClearUsage)
	if err != nil {
		return err
	}
	var run string
	switch len(pos) {
	case 0:
	case 1:
		run = pos[0]
		if err := checkRunIDs("kmx journal clear", run); err != nil {
			return err
		}
	default:
		return usagef(journalClearUsage, "kmx journal clear: one run at a time, or none to clear every finished run (got %d)", len(pos))
	}
	dir, exists, err := journalDir("kmx journal clear", env)
	if err != nil {
		return err
	}
	out := journalCleared{Schema: JournalClearSchema, Label: runner.Label, Dir: dir, Removed: []string{}, Kept: []string{}}
	var clearErr error
	switch {
	case !exists && run != "":
		clearErr = &journal.NotFoundError{RunID: run, Dir: dir}
	case exists:
		var res journal.Cleared
		res, clearErr = journal.Clear(dir, run)
		out.Removed = append(out.Removed, res.Removed...)
		var re *journal.RunningError
		if errors.As(clearErr, &re) {
			out.Kept = append(out.Kept, re.RunIDs...)
		}
	}
	if asJSON {
		if err := encodeJSON(env.Stdout, out); err != nil {
			return err
		}
	} else {
		switch {
		case len(out.Removed) > 0:
			fmt.Fprintf(env.Stdout, "removed %s from %s (%s); other files in the folder are untouched\n", plural(len(out.Removed), "run"), dir, runner.Label)
			for _, id := range out.Removed {
				fmt.Fprintf(env.Stdout, "  %s\n", id)
			}
		case clearErr == nil:
			fmt.Fprintf(env.Stdout, "no finished runs to clear in %s\n", dir)
		}
	}
	return clearError(env, clearErr)
}

// clearError maps Clear's errors to exit codes: a run kept because it is
// executing, a missing run or an unsafe file is a refusal (2); a removal
// whose outcome is uncertain or that stopped half-way is a failure (1).
func clearError(env Env, err error) error {
	if err == nil {
		return nil
	}
	// Each of Clear's errors says its own next step (problem.Problem).
	next := problem.NextStep(err)
	if next == "" {
		next = "run kmx journal list to see what is left"
	}
	refusal := &RefusalError{Msg: "kmx journal clear: " + strings.TrimPrefix(err.Error(), "clear: "), Next: next}
	var ue *journal.UncertainError
	var ce *journal.ChangedError
	if errors.As(err, &ue) || errors.As(err, &ce) {
		printProblem(env, refusal)
		return &FailureError{Msg: "clear incomplete"}
	}
	return refusal
}
