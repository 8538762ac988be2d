package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
)

func runJournalInspect(ctx context.Context, env Env, args []string) error {
	flags := newFlagSet("journal inspect")
	var asJSON, showReasoning, showContent bool
	flags.BoolVar(&asJSON, "json", false, "print the versioned JSON replay (what the editor's replay panel renders)")
	flags.BoolVar(&showReasoning, "show-reasoning", false, "include each judge sample's reasoning (withheld by default)")
	flags.BoolVar(&showContent, "show-content", false, "include the instructions each agent turn sent (withheld by default; their size is always shown)")
	pos, err := parseInterspersed(flags, args, journalInspectUsage)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(journalInspectUsage, "kmx journal inspect: name one run (kmx journal list shows them)")
	}
	run := pos[0]
	const cmd = "kmx journal inspect"
	if err := checkRunIDs(cmd, run); err != nil {
		return err
	}
	none := &RefusalError{Msg: fmt.Sprintf("%s: there is no retained run %s: no run has been journaled in this state folder yet", cmd, run), Next: "run kmx test FILE or kmx run FILE first"}
	in, err := replayJournal(ctx, env, cmd, none, func(ctx context.Context, dir string) (*readback.Inspection, error) {
		return readback.Inspect(ctx, dir, run)
	})
	if err != nil {
		return err
	}
	if !showReasoning {
		in.HideReasoning()
	}
	if !showContent {
		in.HideContent()
	}
	return showReplay(env, asJSON, in, func(w io.Writer) { printInspection(w, in, showReasoning) }, in.LiveCalls)
}

func printInspection(w io.Writer, in *readback.Inspection, showReasoning bool) {
	withheldContent := false
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
		switch {
		case t.Instructions != nil:
			fmt.Fprintf(w, "    instructions sent (%s, %s):\n", plural(t.InstructionsBytes, "byte"), plural(t.InstructionsLines, "line"))
			for _, l := range strings.Split(strings.TrimRight(*t.Instructions, "\n"), "\n") {
				if l = clean(l); l == "" {
					fmt.Fprintln(w)
					continue
				}
				fmt.Fprintf(w, "      %s\n", l)
			}
		case t.InstructionsBytes > 0:
			fmt.Fprintf(w, "    instructions: %s, %s sent (withheld)\n", plural(t.InstructionsBytes, "byte"), plural(t.InstructionsLines, "line"))
			withheldContent = true
		}
		printBlock(w, "input", t.Input)
		if t.Answer != nil {
			printBlock(w, "answer", *t.Answer)
		}
		if t.Workspace != nil && printInspectedWorkspace(w, t.Workspace, in.ContentShown) {
			withheldContent = true
		}
		if t.State == readback.TurnVerified {
			// The judge's usage is its samples' (below), apart.
			fmt.Fprintf(w, "    %s\n", tokensText(t.Purpose, t.Usage, t.JudgeUsage))
		}
		for k, s := range t.JudgeSamples {
			line := fmt.Sprintf("    judge sample %d · model %s (%s) · %s", k+1, clean(s.Model.Model), clean(s.Model.Route), s.State)
			switch s.Reply {
			case readback.ReplyScored:
				line += fmt.Sprintf(" · score %d", *s.Score)
			case readback.ReplyInconclusive:
				line += " · inconclusive (no score)"
			case readback.ReplyMalformed:
				line += " · malformed reply"
			}
			fmt.Fprintln(w, line)
			if s.Rubric != "" {
				fmt.Fprintf(w, "      rubric: %s\n", clean(s.Rubric))
			}
			if s.Reasoning != nil {
				fmt.Fprintf(w, "      reasoning: %s\n", clean(*s.Reasoning))
			}
			withheld = withheld || (!showReasoning && s.Reply != readback.ReplyNone && s.Reply != readback.ReplyMalformed)
		}
	}
	printInspectedExamples(w, in)
	fmt.Fprintln(w)
	s := in.Summary
	fmt.Fprintf(w, "%s: %d verified, %d incomplete, %d failed, %d cancelled · %s · %s\n",
		plural(s.Turns, "turn"), s.Verified, s.Incomplete, s.Failed, s.Cancelled, plural(s.JudgeSamples, "judge sample"), plural(in.LiveCalls, "live model call"))
	if u := in.Usage; u != nil {
		line := "tokens: agent " + tokenUsage(u.Agent)
		if u.Judge != nil {
			line += " · judge " + tokenUsage(u.Judge)
		}
		fmt.Fprintln(w, line)
	}
	if withheld {
		fmt.Fprintln(w, "judge reasoning withheld; add --show-reasoning to see it")
	}
	if withheldContent {
		fmt.Fprintln(w, "instructions and workspace diffs withheld; add --show-content to see what each agent turn sent and changed")
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

// printInspectedWorkspace prints a workspace turn's changes: the fixture,
// each changed path with the lines it added and removed, and with content
// shown its diff. It reports whether a diff was withheld.
func printInspectedWorkspace(w io.Writer, ws *readback.InspectedWorkspace, showContent bool) (withheld bool) {
	switch {
	case !ws.Outcome:
		fmt.Fprintf(w, "    workspace %s: no verified outcome in the journal\n", clean(ws.Fixture))
		return false
	case len(ws.Changes) == 0:
		fmt.Fprintf(w, "    workspace %s: no file changed\n", clean(ws.Fixture))
		return false
	}
	fmt.Fprintf(w, "    workspace %s: %s changed\n", clean(ws.Fixture), plural(len(ws.Changes), "file"))
	for _, c := range ws.Changes {
		added, removed := 0, 0
		for _, l := range strings.Split(c.Diff, "\n") {
			switch {
			case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
				added++
			case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
				removed++
			}
		}
		line := fmt.Sprintf("      %s %s", clean(c.Kind), clean(c.Path))
		if c.Diff != "" {
			line += fmt.Sprintf(" (+%d -%d)", added, removed)
		} else if c.Note != "" {
			line += " (" + clean(c.Note) + ")"
		}
		fmt.Fprintln(w, line)
		if c.Diff == "" {
			continue
		}
		if !showContent {
			withheld = true
			continue
		}
		for _, l := range strings.Split(strings.TrimRight(c.Diff, "\n"), "\n") {
			fmt.Fprintf(w, "        %s\n", clean(l))
		}
	}
	return withheld
}

// printInspectedExamples prints each example (each trial of one) with its
// turns, as numbered above, and its token usage summed over them.
func printInspectedExamples(w io.Writer, in *readback.Inspection) {
	if len(in.Examples) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "examples:")
	for _, ex := range in.Examples {
		name := clean(ex.ID)
		if ex.Trial > 0 {
			name += fmt.Sprintf(" (trial %d)", ex.Trial)
		}
		turns := make([]string, 0, len(ex.Turns))
		verified := false
		for _, i := range ex.Turns {
			turns = append(turns, fmt.Sprintf("[%d]", i+1))
			verified = verified || in.Turns[i].State == readback.TurnVerified
		}
		line := fmt.Sprintf("  %s · %s %s", name, plural(len(turns), "turn"), strings.Join(turns, " "))
		if n := len(ex.NotRun); n > 0 {
			line += fmt.Sprintf(", %d not run", n)
		}
		if verified {
			line += " · " + tokensText(invocation.PurposeAgent, ex.Usage, ex.JudgeUsage)
		} else {
			line += " · no verified turn"
		}
		fmt.Fprintln(w, line)
	}
}

// tokensText is a turn's or an example's token usage as the routes
// reported it, the agent's (or a judge turn's own) and its judge samples'
// apart: "tokens: agent 28 (prompt 19, completion 9) · judge 402 (...)".
// A route that reported none is "not reported", never 0.
func tokensText(purpose string, u, judged *readback.TokenUsage) string {
	who := "agent"
	if purpose == invocation.PurposeJudge {
		who = "judge"
	}
	line := "tokens: " + who + " " + tokenUsage(u)
	if judged != nil {
		line += " · judge " + tokenUsage(judged)
	}
	return line
}

func tokenUsage(u *readback.TokenUsage) string {
	if u == nil || u.TotalTokens == 0 && u.PromptTokens == 0 && u.CompletionTokens == 0 {
		return "usage not reported"
	}
	s := fmt.Sprintf("%d (prompt %d, completion %d)", u.TotalTokens, u.PromptTokens, u.CompletionTokens)
	if u.Unreported > 0 {
		s += fmt.Sprintf(", %s reported no usage", plural(u.Unreported, "turn"))
	}
	return s
}
