package readback

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// Regrade is what a re-grade (a Test from a retained run) decided before
// anything was created: per selected example, the source session whose
// answer it grades, or why it is not re-graded.
type Regrade struct {
	// words names settings and commands in Refused (problem.Words).
	words problem.Words
	// Source is the source run's ID.
	Source string
	// Agent maps an example ID to its source agent session.
	Agent map[string]*SourceSession
	// Refused maps an example ID to why it is not re-graded.
	Refused map[string]string
	// Unanswered maps a multi-turn example's turn (agentfile.TurnName) to
	// why it cannot be re-graded: the source's script stopped before it
	// (an earlier turn did not pass there). The turns before it are
	// re-graded; when they pass now, this turn is unknown, never sent.
	Unanswered map[string]string
	// Judges are the source's verified judge sessions, reusable once each
	// when their example's recorded llmJudge spec equals the current one.
	Judges []*SourceSession
	// Specs maps an example ID to the llmJudge specs the source recorded.
	Specs map[string][]journal.ResultJudge
}

// SourceSession is one verified single-turn session of the source run, with
// the records to copy into the re-grade's journal.
type SourceSession struct {
	Placed  journal.SessionPlaced
	Started journal.TurnStarted
	Answer  string
	Records []journal.Record
}

// PlanRegrade reads the source run (replaying every turn with zero model
// calls: an altered journal refuses the whole re-grade) and matches each
// selected example to a verified source turn with exactly the current
// instructions bytes, input and model identity.
func PlanRegrade(ctx context.Context, dir string, plan *invocation.Plan, from string, w problem.Words) (*Regrade, error) {
	src, err := inspectSource(ctx, dir, from)
	if err != nil {
		return nil, err
	}
	in := src.in
	if in.LiveCalls != 0 {
		return nil, invocation.RefuseIn(func(w problem.Words) string {
			return "report this kmx bug; " + w(problem.Call, "") + " " + w(problem.TestCmd, "FILE") + " to test afresh"
		}, nil, "replaying run %s attempted %d model calls", from, in.LiveCalls)
	}
	if in.Run.AgentID != plan.Agent.ID {
		return nil, invocation.RefuseIn(func(w problem.Words) string {
			if l := w(problem.Runs, "FILE"); l != "" {
				return "pass a run of this file (" + l + "), or run kmx test FILE"
			}
			return otherRunNext(w)
		}, nil, "run %s is of agent %q, not %q", from, in.Run.AgentID, plan.Agent.ID)
	}
	if here := journal.PathKey(plan.Path); !journal.SamePath(in.Run.AgentPath, here) {
		// The same name in another folder: another agent, whose answers
		// were never this file's.
		return nil, invocation.RefuseIn(func(w problem.Words) string {
			if l := w(problem.Runs, "FILE"); l != "" {
				return "pass a run of this file (" + l + "), or run kmx test FILE"
			}
			return otherRunNext(w)
		}, nil, "run %s is of %s, another file named %q, not of %s", from, in.Run.AgentPath, plan.Agent.ID, here)
	}
	if in.Run.Command == "baseline" {
		// A comparison's baseline ran the instructions of another revision
		// (or none): its answers were never this file's.
		what := "another revision's instructions"
		if src.result != nil && src.result.Baseline != nil {
			what = "the instructions at " + src.result.Baseline.Rev
			if src.result.Baseline.Rev == "none" {
				what = "empty instructions"
			}
		}
		return nil, invocation.RefuseIn(func(w problem.Words) string {
			if l := w(problem.Runs, "FILE"); l != "" {
				return "pass the run of a kmx test of the file as it is (" + l + " shows them; the comparison's current column is one), or run kmx test FILE"
			}
			return "pass the run of a Test of the file as it is as " + w(problem.From, "") + " (each Test result names its run), or test afresh without it"
		}, nil, "run %s is a comparison's baseline: it answered with %s, so a re-grade of the file as it is cannot use its answers", from, what)
	}
	if in.Run.Command != string(invocation.ModeTest) || src.result == nil {
		return nil, invocation.RefuseIn(func(w problem.Words) string {
			if l := w(problem.Runs, "FILE"); l != "" {
				return "pass the run of a kmx test (" + l + " shows them), or run kmx test FILE"
			}
			return "pass the run of a completed Test as " + w(problem.From, "") + " (each Test result names its run), or test afresh without it"
		}, func(w problem.Words) string {
			return fmt.Sprintf("run %s is not a completed %s: it recorded no verdicts", from, w(problem.TestCmd, ""))
		}, "")
	}
	rg := &Regrade{words: w, Source: from, Agent: map[string]*SourceSession{}, Refused: map[string]string{}, Unanswered: map[string]string{}, Specs: map[string][]journal.ResultJudge{}}
	for _, re := range src.result.Examples {
		if _, ok := rg.Specs[re.ID]; !ok {
			rg.Specs[re.ID] = re.Judges
		}
	}
	verified := map[string]bool{}
	for _, t := range in.Turns {
		if t.State == TurnVerified && t.Turn == 1 {
			verified[t.SessionID] = true
		}
		for _, js := range t.JudgeSamples {
			if js.State == TurnVerified && js.Turn == 1 {
				verified[js.SessionID] = true
			}
		}
	}
	// Every source session with exactly one verified turn, in journal order.
	var sess []*SourceSession
	for _, s := range src.sessions {
		if !verified[s.id] || len(s.order) != 1 {
			continue
		}
		var recs []journal.Record
		for _, r := range src.recs {
			if r.SessionID == s.id {
				recs = append(recs, r)
			}
		}
		sess = append(sess, &SourceSession{Placed: s.placed, Started: s.started[1], Answer: s.terminal[1].Answer, Records: recs})
	}
	agentID := journal.ModelIdentity{Route: plan.Routes.Agent.Route, Model: plan.Routes.Agent.Model}
	// A file that names no model re-grades as the default unless a model
	// is named: the source run's model was named when it ran.
	unnamed := (plan.Agent.Model == nil || *plan.Agent.Model == "") && agentID.Model == invocation.DefaultModel
	for _, ex := range plan.Selected {
		if ex.MultiTurn() {
			if why := rg.script(sess, plan, ex, agentID, unnamed, from); why != "" {
				rg.Refused[ex.ID] = why
			}
			continue
		}
		var cand *SourceSession
		for _, s := range sess {
			if s.Placed.Purpose == invocation.PurposeAgent && s.Placed.ExampleID == ex.ID {
				cand = s
				break
			}
		}
		ws := plan.WorkspaceDir(ex.ID)
		switch {
		case cand == nil:
			rg.Refused[ex.ID] = retest(w, "test it", fmt.Sprintf("not re-graded: run %s has no verified answer for this example", from))
		case ws != "" && (cand.Placed.Workspace == nil || cand.Placed.Workspace.Fixture != ws):
			// A workspace turn is re-graded from its journaled outcome
			// (the calls and what they changed), with no fixture read.
			rg.Refused[ex.ID] = retest(w, "test it", fmt.Sprintf("not re-graded: run %s did not run this example in the workspace %s", from, ws))
		case ws != "" && plan.Workspace(ex.ID) != nil && cand.Placed.Workspace.Hash != plan.Workspace(ex.ID).Hash:
			rg.Refused[ex.ID] = retest(w, "test the current files", fmt.Sprintf("not re-graded: the fixture workspace %s changed since run %s", ws, from))
		case cand.Started.Instructions != plan.Agent.Instructions:
			rg.Refused[ex.ID] = retest(w, "test the current text", fmt.Sprintf("not re-graded: the instructions changed since run %s", from))
		case cand.Started.Input != ex.Input:
			rg.Refused[ex.ID] = retest(w, "test the current text", fmt.Sprintf("not re-graded: the example's input changed since run %s", from))
		case cand.Placed.Model != agentID || cand.Started.Model != agentID:
			rg.Refused[ex.ID] = modelChanged(w, from, cand.Placed.Model, agentID, unnamed)
		default:
			// A tool turn is re-graded from its journaled trace (the calls
			// and their results, replay-verified), but only when the tools
			// offered today are the ones that trace was made with.
			if why := toolsChanged(cand.Placed.Tools, plan.Tools(ex.ID), from, w); why != "" {
				rg.Refused[ex.ID] = why
				break
			}
			rg.Agent[ex.ID] = cand
		}
	}
	for _, s := range sess {
		if s.Placed.Purpose == invocation.PurposeJudge {
			rg.Judges = append(rg.Judges, s)
		}
	}
	return rg, nil
}

// script matches each turn of a multi-turn example to a verified source
// session of that turn (named agentfile.TurnName) with exactly the current
// instructions, input and model, and with the history the chosen earlier
// turns make (their inputs and answers): the turns of one conversation of
// the source, never turns of two trials spliced together. It returns why
// the example is not re-graded, or "" with rg.Agent holding every turn.
// An example with a workspace is re-graded only when every chosen turn ran
// on that fixture, and (when it is there to read) the fixture is the one
// the source run copied: each turn's journaled outcome answers for it.
func (rg *Regrade) script(sess []*SourceSession, plan *invocation.Plan, ex agentfile.Example, model journal.ModelIdentity, unnamed bool, from string) string {
	w := rg.words
	instructions, tools := plan.Agent.Instructions, plan.Tools(ex.ID)
	ws := plan.WorkspaceDir(ex.ID)
	var history []journal.HistoryMessage
	chosen := map[string]*SourceSession{}
	for i, turn := range ex.Turns {
		name := agentfile.TurnName(ex.ID, i+1)
		var cand, seen *SourceSession
		for _, s := range sess {
			if s.Placed.Purpose != invocation.PurposeAgent || s.Placed.ExampleID != name {
				continue
			}
			if seen == nil {
				seen = s
			}
			if s.Started.Instructions == instructions && s.Started.Input == turn.Input && s.Placed.Model == model &&
				s.Started.Model == model && sameHistory(s.Started.History, history) {
				cand = s
				break
			}
		}
		switch {
		case cand != nil:
		case seen == nil && i > 0:
			// The source stopped its script before this turn (or did not
			// verify it): the turns before it are re-graded, and stop
			// there as they did in the source unless they pass now.
			rg.Unanswered[name] = retest(w, "test it", fmt.Sprintf("not re-graded: run %s holds no answer for turn %d (its script stopped before it)", from, i+1))
			for n, s := range chosen {
				rg.Agent[n] = s
			}
			return ""
		case seen == nil:
			return retest(w, "test it", fmt.Sprintf("not re-graded: run %s has no verified answer for turn %d of this example", from, i+1))
		case seen.Started.Instructions != instructions:
			return retest(w, "test the current text", fmt.Sprintf("not re-graded: the instructions changed since run %s", from))
		case seen.Started.Input != turn.Input:
			return retest(w, "test the current text", fmt.Sprintf("not re-graded: the input of turn %d changed since run %s", i+1, from))
		case seen.Placed.Model != model || seen.Started.Model != model:
			return modelChanged(w, from, seen.Placed.Model, model, unnamed)
		default:
			return retest(w, "test it", fmt.Sprintf("not re-graded: run %s holds no turn %d sent after its turn %d's answer", from, i+1, i))
		}
		switch {
		case ws != "" && (cand.Placed.Workspace == nil || cand.Placed.Workspace.Fixture != ws):
			return retest(w, "test it", fmt.Sprintf("not re-graded: run %s did not run this example in the workspace %s", from, ws))
		case ws != "" && plan.Workspace(ex.ID) != nil && cand.Placed.Workspace.Hash != plan.Workspace(ex.ID).Hash:
			return retest(w, "test the current files", fmt.Sprintf("not re-graded: the fixture workspace %s changed since run %s", ws, from))
		}
		if why := toolsChanged(cand.Placed.Tools, tools, from, w); why != "" {
			return why
		}
		chosen[name] = cand
		history = append(history, journal.Exchange(turn.Input, cand.Answer)...)
	}
	for name, s := range chosen {
		rg.Agent[name] = s
	}
	return ""
}

// toolsChanged says how the tools offered to an example today differ from
// the ones its source session was offered (declared names, kmx.yaml
// states, sources, recordings, definitions), or "" when they are the same:
// a journaled trace answers for the tools it was made with, and grading it
// against other tools would grade a run that never happened.
func toolsChanged(was, now []journal.OfferedTool, from string, w problem.Words) string {
	names := func(ts []journal.OfferedTool) map[string]journal.OfferedTool {
		m := make(map[string]journal.OfferedTool, len(ts))
		for _, t := range ts {
			m[t.Name] = t
		}
		return m
	}
	before, after := names(was), names(now)
	for _, t := range now {
		old, ok := before[t.Name]
		switch {
		case !ok:
			return retest(w, "test it with today's tools", fmt.Sprintf("not re-graded: the tool %s was not offered in run %s", t.Name, from))
		case !sameTool(old, t):
			return retest(w, "test it with today's tools", fmt.Sprintf("not re-graded: the tool %s changed since run %s (%s)", t.Name, from, toolChange(old, t)))
		}
	}
	for _, t := range was {
		if _, ok := after[t.Name]; !ok {
			return retest(w, "test it with today's tools", fmt.Sprintf("not re-graded: the tool %s was offered in run %s and is not declared now", t.Name, from))
		}
	}
	return ""
}

// otherRunNext is the next step of a run of another file where the front
// has no list of runs to point to (MCP: each Test result names its run).
func otherRunNext(w problem.Words) string {
	return "pass a run of this file as " + w(problem.From, "") + " (each Test result names its run), or test afresh without it"
}

// retest is why an example is not re-graded, then the way to test it
// afresh (to ...) in w's words: "run kmx test to test it" on the command
// line, "call Test to test it" in MCP.
func retest(w problem.Words, to, why string) string {
	return why + "; " + w(problem.Call, "") + " " + w(problem.TestCmd, "") + " to " + to
}

// sameTool compares two offered tools by their journaled form, so a nil and
// an empty recording list are the same.
func sameTool(a, b journal.OfferedTool) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

// toolChange names what differs between two offerings of one tool.
func toolChange(was, now journal.OfferedTool) string {
	switch {
	case was.State != now.State:
		return fmt.Sprintf("kmx.yaml state %s, now %s", was.State, now.State)
	case was.Source != now.Source:
		return fmt.Sprintf("answered by %s, now %s", was.Source, now.Source)
	case !sameTool(journal.OfferedTool{Recorded: was.Recorded, Pending: was.Pending}, journal.OfferedTool{Recorded: now.Recorded, Pending: now.Pending}):
		return "its recording changed"
	default:
		return "its definition changed"
	}
}

func sameHistory(a, b []journal.HistoryMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// modelChanged says why an example answered by model got is not re-graded
// as want. When the agent file names no model and none was named (unnamed),
// want is only kmx's default: the step is naming the model the run used,
// which sends nothing.
func modelChanged(w problem.Words, from string, got, want journal.ModelIdentity, unnamed bool) string {
	if unnamed {
		return fmt.Sprintf("not re-graded: run %s answered with model %s (%s), and the agent file names no model; pass %s to re-grade its answers with the model that gave them",
			from, got.Model, got.Route, w(problem.Model, got.Model))
	}
	return retest(w, "test with this model", fmt.Sprintf("not re-graded: run %s answered with model %s (%s), not %s (%s)",
		from, got.Model, got.Route, want.Model, want.Route))
}
