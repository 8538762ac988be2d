package localpreview

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/sessions/sessionspb"
)

// regrade is what a re-grade (Test with Options.FromRun) decided before
// anything was created: per selected example, the source session whose
// answer it grades, or why it is not re-graded.
type regrade struct {
	source string
	// agent maps an example ID to its source agent session.
	agent map[string]*sourceSession
	// refused maps an example ID to why it is not re-graded.
	refused map[string]string
	// judges are the source's verified judge sessions, reusable once each
	// when their example's recorded llmJudge spec equals the current one.
	judges []*sourceSession
	// specs maps an example ID to the llmJudge specs the source recorded.
	specs map[string][]journal.ResultJudge
}

// sourceSession is one verified single-turn session of the source run, with
// the records to copy into the re-grade's journal.
type sourceSession struct {
	placed  journal.SessionPlaced
	started journal.TurnStarted
	answer  string
	recs    []journal.Record
}

// planRegrade reads the source run (replaying every turn with zero model
// calls: an altered journal refuses the whole re-grade) and matches each
// selected example to a verified source turn with exactly the current
// instructions bytes, input and model identity.
func planRegrade(ctx context.Context, dir string, plan *Plan, from string) (*regrade, error) {
	src, err := inspectSource(ctx, dir, from)
	if err != nil {
		return nil, err
	}
	in := src.in
	if in.LiveCalls != 0 {
		return nil, refuse("report this kmx bug; run kmx test FILE to test afresh", "replaying run %s attempted %d model calls", from, in.LiveCalls)
	}
	if in.Run.AgentID != plan.Agent.ID {
		return nil, refuse("pass a run of this file (kmx journal list --file FILE), or run kmx test FILE",
			"run %s is of agent %q, not %q", from, in.Run.AgentID, plan.Agent.ID)
	}
	if in.Run.Command != "test" || src.result == nil {
		return nil, refuse("pass the run of a kmx test (kmx journal list --file FILE shows them), or run kmx test FILE",
			"run %s is not a completed kmx test: it recorded no verdicts", from)
	}
	rg := &regrade{source: from, agent: map[string]*sourceSession{}, refused: map[string]string{}, specs: map[string][]journal.ResultJudge{}}
	for _, re := range src.result.Examples {
		if _, ok := rg.specs[re.ID]; !ok {
			rg.specs[re.ID] = re.Judges
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
	var sess []*sourceSession
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
		sess = append(sess, &sourceSession{placed: s.placed, started: s.started[1], answer: s.terminal[1].Answer, recs: recs})
	}
	agentID := journal.ModelIdentity{Route: plan.Routes.agent.Route, Model: plan.Routes.agent.Model}
	for _, ex := range plan.Selected {
		var cand *sourceSession
		for _, s := range sess {
			if s.placed.Purpose == PurposeAgent && s.placed.ExampleID == ex.ID {
				cand = s
				break
			}
		}
		switch {
		case len(plan.tools.sets[ex.ID]) > 0:
			// A tool turn's calls are not re-judged from the journal yet:
			// refuse rather than judge tool assertions without the calls.
			rg.refused[ex.ID] = "not re-graded: the example declares tools, and tool turns are not re-graded from a journal yet; run kmx test to test it"
		case cand == nil:
			rg.refused[ex.ID] = fmt.Sprintf("not re-graded: run %s has no verified answer for this example; run kmx test to test it", from)
		case cand.started.Instructions != plan.Agent.Instructions:
			rg.refused[ex.ID] = fmt.Sprintf("not re-graded: the instructions changed since run %s; run kmx test to test the current text", from)
		case cand.started.Input != ex.Input:
			rg.refused[ex.ID] = fmt.Sprintf("not re-graded: the example's input changed since run %s; run kmx test to test the current text", from)
		case cand.placed.Model != agentID || cand.started.Model != agentID:
			rg.refused[ex.ID] = fmt.Sprintf("not re-graded: run %s answered with model %s (%s), not %s (%s); run kmx test to test with this model",
				from, cand.placed.Model.Model, cand.placed.Model.Route, agentID.Model, agentID.Route)
		default:
			rg.agent[ex.ID] = cand
		}
	}
	for _, s := range sess {
		if s.placed.Purpose == PurposeJudge {
			rg.judges = append(rg.judges, s)
		}
	}
	return rg, nil
}

// regradeExecutor answers agent turns by copying their source session into
// this run's journal and replaying it there with zero model calls; judge
// turns reuse a source sample when allowed, else go to next (a fresh
// sample, counted).
type regradeExecutor struct {
	rg     *regrade
	plan   *Plan
	j      *journal.Journal
	client sessionspb.SessionsClient
	next   Executor

	mu     sync.Mutex
	used   map[*sourceSession]bool
	reused atomic.Int64
	replay atomic.Int64
}

func (e *regradeExecutor) Execute(ctx context.Context, t Turn) (Outcome, error) {
	if t.Purpose == PurposeAgent {
		s := e.rg.agent[t.ExampleID]
		if s == nil {
			// The loop never sends a refused example; reaching here is a bug,
			// and nothing is sent.
			return Outcome{Problem: "not re-graded"}, nil
		}
		e.replay.Add(1)
		return e.copyAndVerify(ctx, s)
	}
	if s := e.reusable(t); s != nil {
		e.reused.Add(1)
		return e.copyAndVerify(ctx, s)
	}
	return e.next.Execute(ctx, t)
}

// reusable finds an unused verified source judge sample for t: the same
// example, judge instructions, input (rubric, example input and answer,
// byte for byte) and judge model, and a source llmJudge spec (rubric, judge
// model, threshold) equal to the current one.
func (e *regradeExecutor) reusable(t Turn) *sourceSession {
	model := journal.ModelIdentity{Route: t.Model.Route, Model: t.Model.Model}
	var ex agentfile.Example
	for _, x := range e.plan.Selected {
		if x.ID == t.ExampleID {
			ex = x
		}
	}
	allowed := false
	for _, cur := range judgeSpecs(e.plan.Routes, ex) {
		if cur.Model != model || !judgeInputHasRubric(t.Input, cur.Rubric) {
			continue
		}
		for _, old := range e.rg.specs[t.ExampleID] {
			if old == cur {
				allowed = true
			}
		}
	}
	if !allowed {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.rg.judges {
		if e.used[s] || s.placed.ExampleID != t.ExampleID || s.placed.Model != model ||
			s.started.Instructions != t.Instructions || s.started.Input != t.Input {
			continue
		}
		if e.used == nil {
			e.used = map[*sourceSession]bool{}
		}
		e.used[s] = true
		return s
	}
	return nil
}

// copyAndVerify appends the source session's records to this run's
// journal, unchanged, and replays the turn there. Only a turn that replays
// to the source's answer with zero model calls is verified.
func (e *regradeExecutor) copyAndVerify(ctx context.Context, s *sourceSession) (Outcome, error) {
	wctx := context.WithoutCancel(ctx)
	for _, r := range s.recs {
		r.Seq = 0
		if _, err := e.j.Append(wctx, r); err != nil {
			return Outcome{}, fmt.Errorf("copy the source turn: %w", err)
		}
	}
	out := Outcome{Journaled: true, Completed: true, Answer: s.answer, SessionID: s.placed.SessionID}
	v, err := e.client.VerifyTurn(wctx, &sessionspb.VerifyTurnRequest{SessionId: s.placed.SessionID, Turn: 1})
	if err != nil {
		return Outcome{}, fmt.Errorf("verify the re-graded turn: %w", err)
	}
	switch {
	case !v.GetVerified():
		out.Problem = "not replay-verified: " + v.GetReason()
	case v.GetLiveCalls() != 0:
		out.Problem = "not replay-verified: replay attempted a live model call"
	case v.GetAnswer() != s.answer:
		out.Problem = "not replay-verified: replay answer differs"
	default:
		out.Verified = true
	}
	return out, nil
}

// judgeInputHasRubric says whether a judge turn's input (the JSON object
// the judge grades) carries exactly this rubric.
func judgeInputHasRubric(input, rubric string) bool {
	var p struct {
		Rubric string `json:"rubric"`
	}
	return json.Unmarshal([]byte(input), &p) == nil && p.Rubric == rubric
}

// notRegraded says why example id is not re-graded, or "".
func (p *Plan) notRegraded(id string) string {
	if p.regrade == nil {
		return ""
	}
	return p.regrade.refused[id]
}
