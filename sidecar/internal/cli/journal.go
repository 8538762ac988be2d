package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localpreview"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

const (
	journalUsage        = "kmx journal list [--json] [--file FILE] | kmx journal clear [RUN] [--json] | kmx journal inspect RUN [--json] [--show-reasoning] | kmx journal diff RUN_A RUN_B [--json]"
	journalListUsage    = "kmx journal list [--json] [--file FILE]"
	journalClearUsage   = "kmx journal clear [RUN] [--json]"
	journalInspectUsage = "kmx journal inspect RUN [--json] [--show-reasoning]"
)

// Schemas of the JSON the journal subcommands print. Inspect's is
// localpreview.InspectSchema.
const (
	JournalListSchema  = "kmx.journal.list/v1"
	JournalClearSchema = "kmx.journal.clear/v1"
)

// journalList is the JSON of kmx journal list: runs newest first.
type journalList struct {
	Schema string `json:"schema"`
	Label  string `json:"label"`
	Dir    string `json:"dir"`
	// Keep is how many runs retention keeps when a run starts.
	Keep int `json:"keep"`
	// File is set with --file: the agent the runs were filtered to.
	File *listedFile `json:"file,omitempty"`
	Runs []listedRun `json:"runs"`
}

type listedFile struct {
	Path     string `json:"path"`
	AgentID  string `json:"agentId"`
	Revision string `json:"revision"`
}

type listedRun struct {
	journal.RunInfo
	// CurrentRevision is set with --file: whether the run was of the file's
	// current bytes (false: an earlier revision of the same agent).
	CurrentRevision *bool `json:"currentRevision,omitempty"`
}

// journalCleared is the JSON of kmx journal clear.
type journalCleared struct {
	Schema  string   `json:"schema"`
	Label   string   `json:"label"`
	Dir     string   `json:"dir"`
	Removed []string `json:"removed"`
	// Kept are runs that are still executing; they were not removed.
	Kept []string `json:"kept"`
}

// runJournal lists, clears or replays the retained runs in the journal
// folder. Like Explain it is offline: no model, provider, credential or
// network; it reads the environment only to find the state folder, and it
// never creates that folder.
func runJournal(ctx context.Context, env Env, args []string) error {
	if isHelp(args) {
		return &HelpRequest{Text: "Usage: " + strings.ReplaceAll(journalUsage, " | ", "\n       ") + "\n\nRun 'kmx journal list --help' (or clear, inspect, diff) for a subcommand's flags.\n"}
	}
	if len(args) == 0 {
		return usagef(journalUsage, "kmx journal: name what to do: list, clear, inspect or diff")
	}
	switch args[0] {
	case "list":
		return runJournalList(env, args[1:])
	case "clear":
		return runJournalClear(env, args[1:])
	case "inspect":
		return runJournalInspect(ctx, env, args[1:])
	case "diff":
		return runJournalDiff(ctx, env, args[1:])
	}
	return usagef(journalUsage, "kmx journal: unknown subcommand %q; use list, clear, inspect or diff", args[0])
}

// journalDir returns the journal folder and whether it exists. It checks
// each state component without creating any: a symlinked, foreign or
// broader component is a refusal that says how to fix it.
func journalDir(cmd string, env Env) (string, bool, error) {
	dir, exists, err := journal.ExistingDir(env.Getenv, runtime.GOOS)
	if err != nil {
		return "", false, &RefusalError{Msg: cmd + ": " + err.Error(), Next: problem.NextStep(err)}
	}
	return dir, exists, nil
}

func stateRefusal(cmd string, err error) error {
	var unsafe *state.UnsafeError
	if errors.As(err, &unsafe) {
		return &RefusalError{Msg: cmd + ": " + unsafe.Error(), Next: unsafe.Fix}
	}
	return &RefusalError{Msg: cmd + ": " + err.Error(), Next: "check the state folder (KMX_HOME), then try again"}
}

func runJournalList(env Env, args []string) error {
	flags := newFlagSet("journal list")
	var asJSON bool
	var file string
	flags.BoolVar(&asJSON, "json", false, "print the versioned JSON list")
	flags.StringVar(&file, "file", "", "list only the runs of this agent `FILE`'s agent (its ID), marking its current revision")
	pos, err := parseInterspersed(flags, args, journalListUsage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(journalListUsage, "kmx journal list: unexpected argument %q; to filter by file use --file %s", pos[0], pos[0])
	}
	var lf *listedFile
	if file != "" {
		src, err := readAgentFile("journal list", file)
		if err != nil {
			return err
		}
		res, _, err := agentfile.ParseFile(file, src, localpreview.ReadPairFile)
		if err != nil {
			return usagef("pass a *.agent.md file", "kmx journal list: %v", err)
		}
		if res.Agent == nil || res.Agent.ID == "" {
			return usagef("pass a *.agent.md file", "kmx journal list: cannot tell which agent %s is", file)
		}
		lf = &listedFile{Path: file, AgentID: res.Agent.ID, Revision: res.Agent.Revision}
	}
	dir, exists, err := journalDir("kmx journal list", env)
	if err != nil {
		return err
	}
	var runs []journal.RunInfo
	if exists {
		if runs, err = journal.List(dir); err != nil {
			return stateRefusal("kmx journal list", err)
		}
	}
	out := journalList{Schema: JournalListSchema, Label: localpreview.Label, Dir: dir, Keep: journal.KeepRuns, File: lf, Runs: []listedRun{}}
	for _, r := range slices.Backward(runs) {
		lr := listedRun{RunInfo: r}
		if lf != nil {
			if r.AgentID != lf.AgentID {
				continue
			}
			cur := r.AgentRevision == lf.Revision
			lr.CurrentRevision = &cur
		}
		out.Runs = append(out.Runs, lr)
	}
	if asJSON {
		return encodeJSON(env.Stdout, out)
	}
	printRuns(env.Stdout, out)
	return nil
}

func printRuns(w io.Writer, l journalList) {
	fmt.Fprintf(w, "kmx journal list (%s) · %s\n", l.Label, l.Dir)
	if l.File != nil {
		fmt.Fprintf(w, "runs of agent %s (%s)\n", clean(l.File.AgentID), l.File.Path)
	}
	if len(l.Runs) == 0 {
		fmt.Fprintln(w, "no retained runs")
		return
	}
	fmt.Fprintf(w, "%-36s %-18s %-8s %-24s %9s\n", "RUN", "STATUS", "COMMAND", "AGENT", "SIZE")
	for _, r := range l.Runs {
		agent := clean(r.AgentID)
		if r.CurrentRevision != nil && !*r.CurrentRevision {
			agent += " (earlier revision)"
		}
		fmt.Fprintf(w, "%-36s %-18s %-8s %-24s %9s\n", r.ID, r.Status, clean(r.Command), agent, sizeText(r.Size))
		if r.Problem != "" {
			fmt.Fprintf(w, "%-36s %s\n", "", clean(r.Problem))
		}
	}
	fmt.Fprintf(w, "%s, newest first; kmx keeps the newest %d when a run starts\n", plural(len(l.Runs), "run"), l.Keep)
	fmt.Fprintln(w, "next: kmx journal inspect RUN to replay one, kmx journal clear [RUN] to remove runs")
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
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
		if !journal.ValidRunID(run) {
			return usagef("run kmx journal list and pass a run ID from it", "kmx journal clear: %q is not a run ID (a journal file name without .db, like 20261130T162341.123456789Z-0a1b2c3d)", run)
		}
	default:
		return usagef(journalClearUsage, "kmx journal clear: one run at a time, or none to clear every finished run (got %d)", len(pos))
	}
	dir, exists, err := journalDir("kmx journal clear", env)
	if err != nil {
		return err
	}
	out := journalCleared{Schema: JournalClearSchema, Label: localpreview.Label, Dir: dir, Removed: []string{}, Kept: []string{}}
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
			fmt.Fprintf(env.Stdout, "removed %s from %s (%s); other files in the folder are untouched\n", plural(len(out.Removed), "run"), dir, localpreview.Label)
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
	msg := "kmx journal clear: " + strings.TrimPrefix(err.Error(), "clear: ")
	var ue *journal.UncertainError
	var ce *journal.ChangedError
	if errors.As(err, &ue) || errors.As(err, &ce) {
		fmt.Fprintf(env.Stderr, "kmx: %s\n", msg)
		fmt.Fprintln(env.Stderr, "next: run kmx journal list to see what is left")
		return &FailureError{Msg: "clear incomplete"}
	}
	var re *journal.RunningError
	var nf *journal.NotFoundError
	var unsafe *state.UnsafeError
	switch {
	case errors.As(err, &unsafe):
		return &RefusalError{Msg: msg, Next: unsafe.Fix}
	case errors.As(err, &re):
		return &RefusalError{Msg: msg, Next: "wait for the run to finish, or cancel it (Ctrl-C where it runs), then run kmx journal clear again"}
	case errors.As(err, &nf):
		return &RefusalError{Msg: msg, Next: "run kmx journal list to see the retained runs"}
	}
	return &RefusalError{Msg: msg, Next: "run kmx journal list to see what is left"}
}

func runJournalInspect(ctx context.Context, env Env, args []string) error {
	flags := newFlagSet("journal inspect")
	var asJSON, showReasoning bool
	flags.BoolVar(&asJSON, "json", false, "print the versioned JSON replay (what the editor's replay panel renders)")
	flags.BoolVar(&showReasoning, "show-reasoning", false, "include each judge sample's reasoning (withheld by default)")
	pos, err := parseInterspersed(flags, args, journalInspectUsage)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(journalInspectUsage, "kmx journal inspect: name one run (kmx journal list shows them)")
	}
	run := pos[0]
	if !journal.ValidRunID(run) {
		return usagef("run kmx journal list and pass a run ID from it", "kmx journal inspect: %q is not a run ID (a journal file name without .db, like 20261130T162341.123456789Z-0a1b2c3d)", run)
	}
	dir, exists, err := journalDir("kmx journal inspect", env)
	if err != nil {
		return err
	}
	if !exists {
		return &RefusalError{Msg: fmt.Sprintf("kmx journal inspect: there is no retained run %s: no run has been journaled in this state folder yet", run), Next: "run kmx test FILE or kmx run FILE first"}
	}
	in, err := localpreview.Inspect(ctx, dir, run)
	if err != nil {
		if r, ok := localpreview.AsRefusal(err); ok {
			return &RefusalError{Msg: "kmx journal inspect: " + r.Msg, Next: r.Next}
		}
		return &RefusalError{Msg: "kmx journal inspect: the replay stopped before it finished: " + err.Error(), Next: "run it again; a replay is bounded to 2 minutes"}
	}
	if !showReasoning {
		in.HideReasoning()
	}
	if asJSON {
		if err := encodeJSON(env.Stdout, in); err != nil {
			return err
		}
	} else {
		printInspection(env.Stdout, in, showReasoning)
	}
	if in.LiveCalls != 0 {
		// Inspection must never reach a model; the calls were refused, but
		// a count above zero means kmx is broken and the user must know.
		fmt.Fprintf(env.Stderr, "kmx: the replay attempted %s; each was refused, but this is a kmx bug: please report it\n", plural(in.LiveCalls, "model call"))
		return &FailureError{Msg: "live calls during replay"}
	}
	return nil
}

func printInspection(w io.Writer, in *localpreview.Inspection, showReasoning bool) {
	r := in.Run
	fmt.Fprintf(w, "kmx journal inspect %s (%s)\n", r.ID, in.Label)
	fmt.Fprintf(w, "%s of %s · %s · %s · kmx %s\n", clean(r.Command), clean(r.AgentID), r.Status, r.Created.UTC().Format("2006-01-02 15:04:05 UTC"), clean(r.KmxVersion))
	withheld := false
	for i, t := range in.Turns {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "[%d] %s · %s · model %s (%s) · %s\n", i+1, clean(t.Example), clean(t.Purpose), clean(t.Model.Model), clean(t.Model.Route), strings.ToUpper(t.State))
		if t.Reason != "" {
			fmt.Fprintf(w, "    why: %s\n", clean(t.Reason))
		}
		if t.Error != "" {
			fmt.Fprintf(w, "    error: %s\n", clean(t.Error))
		}
		printBlock(w, "input", t.Input)
		if t.Answer != nil {
			printBlock(w, "answer", *t.Answer)
		}
		for k, s := range t.JudgeSamples {
			line := fmt.Sprintf("    judge sample %d · model %s (%s) · %s", k+1, clean(s.Model.Model), clean(s.Model.Route), s.State)
			switch s.Reply {
			case localpreview.ReplyScored:
				line += fmt.Sprintf(" · score %d", *s.Score)
			case localpreview.ReplyInconclusive:
				line += " · inconclusive (no score)"
			case localpreview.ReplyMalformed:
				line += " · malformed reply"
			}
			fmt.Fprintln(w, line)
			if s.Rubric != "" {
				fmt.Fprintf(w, "      rubric: %s\n", clean(s.Rubric))
			}
			if s.Reasoning != nil {
				fmt.Fprintf(w, "      reasoning: %s\n", clean(*s.Reasoning))
			}
			withheld = withheld || (!showReasoning && s.Reply != localpreview.ReplyNone && s.Reply != localpreview.ReplyMalformed)
		}
	}
	fmt.Fprintln(w)
	s := in.Summary
	fmt.Fprintf(w, "%s: %d verified, %d incomplete, %d failed, %d cancelled · %s · %s\n",
		plural(s.Turns, "turn"), s.Verified, s.Incomplete, s.Failed, s.Cancelled, plural(s.JudgeSamples, "judge sample"), plural(in.LiveCalls, "live model call"))
	if withheld {
		fmt.Fprintln(w, "judge reasoning withheld; add --show-reasoning to see it")
	}
	fmt.Fprintf(w, "%s: no verdicts; run kmx test FILE to test the current text\n", in.Label)
}

// printBlock prints a labeled multi-line value, indented, with control
// characters other than newlines removed so journaled text cannot move the
// cursor or recolor the terminal.
func printBlock(w io.Writer, label, text string) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if i == 0 {
			fmt.Fprintf(w, "    %-7s %s\n", label+":", clean(l))
			continue
		}
		fmt.Fprintf(w, "    %-7s %s\n", "", clean(l))
	}
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}
