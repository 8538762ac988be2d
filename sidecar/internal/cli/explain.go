package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/failures"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

const explainUsage = "kmx test explain FILE [--show-content] [--clear] [--json]"

// ClearSchema versions the JSON of kmx test explain --clear --json.
const ClearSchema = "kmx.explain.clear/v1"

// clearedReport is the JSON of kmx test explain --clear --json.
type clearedReport struct {
	Schema  string `json:"schema"`
	Label   string `json:"label"`
	File    string `json:"file"`
	Subject string `json:"subject"`
	Removed int    `json:"removed"`
}

// runTestExplain shows, or with --clear removes, the retained Test failures
// of one agent file. It is offline: it reads the environment only to find
// the state folder, and touches no model, provider, credential, config or
// journal. Exit 0 when records were shown or the clear succeeded (even with
// nothing to remove), 1 when nothing is retained for the file, 2 on usage,
// an unsafe state folder or records that exist but cannot be read.
func runTestExplain(_ context.Context, env Env, args []string) error {
	flags := newFlagSet("test explain")
	var file string
	var showContent, clear, asJSON bool
	flags.StringVar(&file, "file", "", "the agent `FILE` whose retained failures to show (as the FILE argument)")
	flags.BoolVar(&showContent, "show-content", false, "include answer excerpts (withheld by default)")
	flags.BoolVar(&clear, "clear", false, "remove this file's retained failures (journals are untouched)")
	flags.BoolVar(&asJSON, "json", false, "print the versioned JSON explanation")
	pos, err := parseInterspersed(flags, args, explainUsage)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 1 && file == "":
		file = pos[0]
	case len(pos) > 0 && file != "":
		return usagef("kmx test explain "+file, "kmx test explain: name one agent file, as FILE or --file, not both (%q and %q)", pos[0], file)
	case len(pos) > 1:
		return usagef(explainUsage, "kmx test explain: name one agent file; %q is a second", pos[1])
	case file == "":
		return usagef(explainUsage, "kmx test explain: name the agent file: kmx test explain FILE")
	case clear && showContent:
		return usagef("drop --show-content, or drop --clear to see the records", "kmx test explain: --clear shows nothing, so --show-content has no effect with it")
	}
	root, err := state.Dir(env.Getenv, runtime.GOOS)
	if err != nil {
		return &RefusalError{Msg: "kmx test explain: " + err.Error(), Next: problem.SetKMXHome}
	}
	// Failures are kept per agent file: an examples file names its agent.
	if agent := agentfile.AgentPathOf(file); agent != "" {
		file = agent
	}
	if clear {
		return clearExplain(env, root, file, asJSON)
	}
	exp, gone, err := failures.ExplainFile(root, file, "", showContent)
	if err != nil {
		return &RefusalError{Msg: "kmx test explain: " + err.Error(), Next: problem.NextStep(err)}
	}
	if asJSON {
		if err := writeJSON(env.Stdout, exp); err != nil {
			return err
		}
	} else {
		printExplanation(env.Stdout, exp)
	}
	if len(exp.Corrupt) > 0 && !asJSON {
		for _, c := range exp.Corrupt {
			fmt.Fprintf(env.Stderr, "kmx: retained record %s cannot be read: %s\n", c.Name, c.Reason)
		}
	}
	switch {
	case len(exp.Records) > 0:
		return nil
	case len(exp.Corrupt) > 0:
		return &RefusalError{
			Msg:  fmt.Sprintf("kmx test explain: %s retained for %s, and none can be read", plural(len(exp.Corrupt), "record"), file),
			Next: "run kmx test explain --file " + file + " --clear to remove them, then kmx test " + file,
		}
	}
	if !asJSON {
		if gone {
			fmt.Fprintf(env.Stdout, "%s does not exist (yet)\n", file)
		}
		fmt.Fprintf(env.Stdout, "nothing is retained for %s: kmx keeps a record only when kmx test completes with a fail or unknown verdict (the last %d per file)\n", file, failures.MaxRecordsPerSubject)
		fmt.Fprintf(env.Stdout, "next: run kmx test %s\n", file)
	}
	return &FailureError{Msg: "nothing retained"}
}

func clearExplain(env Env, root, file string, asJSON bool) error {
	subject, err := failures.Subject(file)
	if err != nil {
		return explainError(file, err)
	}
	n, err := failures.Clear(root, subject)
	if err != nil {
		return explainError(file, err)
	}
	if asJSON {
		return writeJSON(env.Stdout, clearedReport{Schema: ClearSchema, Label: failures.Label, File: file, Subject: subject, Removed: n})
	}
	if n == 0 {
		fmt.Fprintf(env.Stdout, "nothing was retained for %s; nothing removed (%s)\n", file, failures.Label)
		return nil
	}
	fmt.Fprintf(env.Stdout, "removed %s for %s (%s); journals and other files are untouched\n", plural(n, "retained failure record"), file, failures.Label)
	return nil
}

// explainError turns a failures error into a refusal that says what to do.
func explainError(file string, err error) error {
	var unsafe *state.UnsafeError
	if errors.As(err, &unsafe) {
		return &RefusalError{Msg: "kmx test explain: " + unsafe.Error(), Next: unsafe.Fix}
	}
	return &RefusalError{Msg: fmt.Sprintf("kmx test explain: %s: %v", file, err), Next: "check the path of the agent file"}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write explanation: %w", err)
	}
	return nil
}

func printExplanation(w io.Writer, exp failures.Explanation) {
	fmt.Fprintf(w, "kmx test explain %s (%s)\n", exp.File, exp.Label)
	if len(exp.Records) == 0 {
		return
	}
	rev := "the file no longer exists"
	if exp.CurrentRevision != "" {
		rev = "current revision " + failures.ShortRevision(exp.CurrentRevision)
	}
	fmt.Fprintf(w, "%s, newest first; %s\n", plural(len(exp.Records), "retained Test failure record"), rev)
	withheld := false
	for i, r := range exp.Records {
		fmt.Fprintln(w)
		judge := ""
		if r.Judge != nil {
			judge = fmt.Sprintf(" · judge %s (%s)", clean(r.Judge.Model), clean(r.Judge.Provider))
		}
		fmt.Fprintf(w, "[%d] %s · verdict %s · %s selection · model %s (%s)%s\n", i+1,
			r.RecordedAt.UTC().Format("2006-01-02 15:04:05 UTC"), r.Verdict, r.Selection, clean(r.Agent.Model), clean(r.Agent.Provider), judge)
		if r.Relation == failures.Historical {
			fmt.Fprintf(w, "    HISTORY: %s\n", r.Note)
		} else {
			fmt.Fprintf(w, "    %s\n", r.Note)
		}
		for _, ex := range r.Examples {
			fmt.Fprintf(w, "    %-8s %-24s %s\n", verdictWord(ex.Verdict), clean(ex.ID), decidingText(ex))
			// A judge's Actual only repeats its scores, already on the line.
			if d := ex.Deciding; d != nil && d.Actual != "" && d.Threshold == nil && len(d.Scores) == 0 {
				fmt.Fprintf(w, "    %-8s %-24s answer excerpt: %s\n", "", "", strconv.Quote(ex.Deciding.Actual))
			}
			withheld = withheld || ex.ContentWithheld
		}
	}
	fmt.Fprintln(w)
	if withheld {
		fmt.Fprintln(w, "answer excerpts withheld; add --show-content to see them")
	}
	fmt.Fprintf(w, "%s: retained diagnostics, not a test result; run kmx test %s to test the current text\n", exp.Label, exp.File)
}

// decidingText says which assertion decided an example and why, in one
// line: type, expected value, and for llmJudge the threshold and scores.
func decidingText(ex failures.ExplainedExample) string {
	d := ex.Deciding
	if d == nil {
		return clean(ex.Message)
	}
	var what string
	switch {
	case d.Threshold != nil || len(d.Scores) > 0:
		what = fmt.Sprintf("threshold %s, scores %s", intText(d.Threshold), scoresText(d.Scores))
	case d.Expected != "":
		what = "expected " + strconv.Quote(d.Expected)
	}
	msg := clean(d.Message)
	if msg == "" {
		msg = clean(d.Outcome)
	}
	if what == "" {
		return fmt.Sprintf("assertion %d (%s): %s", d.Index+1, clean(d.Type), msg)
	}
	return fmt.Sprintf("assertion %d (%s) %s: %s", d.Index+1, clean(d.Type), what, msg)
}

func intText(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

func scoresText(s []*int) string {
	if len(s) == 0 {
		return "none"
	}
	parts := make([]string, len(s))
	for i, p := range s {
		parts[i] = intText(p)
	}
	return strings.Join(parts, ", ")
}

// clean drops control characters so a retained string cannot move the
// cursor or recolor the terminal.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
}
