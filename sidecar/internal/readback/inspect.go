package readback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessions"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/state"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// InspectSchema versions the JSON of an Inspection (kmx journal inspect
// --json, the editor's replay panel). Fields are only ever added within v1.
const InspectSchema = "kmx.journal.inspect/v2"

// InspectLabel is on every Inspection: a replay shows what was journaled,
// it does not test anything.
const InspectLabel = "local preview journal replay; not a test result"

// DefaultInspectBound applies when Inspect's ctx has no deadline.
const DefaultInspectBound = 2 * time.Minute

// Turn states of an inspection. Only "verified" turns replayed; the others
// are what the journal holds for a turn that did not complete.
const (
	TurnVerified   = "verified"
	TurnIncomplete = "incomplete"
	TurnFailed     = "failed"
	TurnCancelled  = "cancelled"
)

// Judge reply kinds of a sample.
const (
	ReplyScored       = "scored"       // a score from 0 to 100
	ReplyInconclusive = "inconclusive" // the judge said the rubric does not apply (score null)
	ReplyMalformed    = "malformed"    // the reply broke the judge format
	ReplyNone         = "none"         // the sample did not verify, so its reply is not read
)

// Inspection is a retained run replayed with zero model calls. It has no
// verdicts: assertions are not re-evaluated.
type Inspection struct {
	Schema string       `json:"schema"`
	Label  string       `json:"label"`
	Run    InspectedRun `json:"run"`
	// LiveCalls counts every model call the replay attempted (each was
	// refused). It is zero unless kmx is broken, and it is never hidden.
	LiveCalls int            `json:"liveCalls"`
	Summary   InspectSummary `json:"summary"`
	// ReasoningShown says whether judge reasoning is included; it is
	// withheld unless asked for (ShowReasoning).
	ReasoningShown bool `json:"reasoningShown"`
	// ContentShown says whether each agent turn's instructions are
	// included (HideContent withholds them; their size stays).
	ContentShown bool            `json:"contentShown"`
	Turns        []InspectedTurn `json:"turns"`
	// Examples groups the agent turns by example (a multi-turn example's
	// turns together, each trial apart), with the verdicts the run
	// recorded and the usage summed over the turns; absent when no turn
	// belongs to an example (an ad-hoc input).
	Examples []InspectedExample `json:"examples,omitempty"`
	// Usage is the run's token usage over its agent turns and, apart, its
	// judge samples; absent when nothing was replayed.
	Usage *InspectedUsage `json:"usage,omitempty"`
	// Comparison is set when the run is a column of a comparison (kmx test
	// --model A --model B, or --baseline): kmx/diffRuns with comparison
	// reads the whole comparison back.
	Comparison *journal.ResultComparison `json:"comparison,omitempty"`
}

// InspectedUsage is token usage kept apart by purpose.
type InspectedUsage struct {
	Agent *TokenUsage `json:"agent,omitempty"`
	Judge *TokenUsage `json:"judge,omitempty"`
}

// TokenUsage is token usage as the routes reported it, summed over model
// sends. Unreported counts the turns (or judge samples) summed here whose
// route reported none: their tokens are in no sum, so a total with
// Unreported > 0 is a lower bound, and one with only Unreported is "not
// reported", never 0.
type TokenUsage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
	Unreported       int `json:"unreported,omitempty"`
}

// addUsage sums u (nil: one turn that reported none) into *sum,
// allocating it on first use.
func addUsage(sum **TokenUsage, u *TokenUsage) {
	if *sum == nil {
		*sum = &TokenUsage{}
	}
	s := *sum
	if u == nil {
		s.Unreported++
		return
	}
	s.PromptTokens += u.PromptTokens
	s.CompletionTokens += u.CompletionTokens
	s.TotalTokens += u.TotalTokens
	s.Unreported += u.Unreported
}

// InspectedExample is one example of the run (one per trial): its agent
// turns in script order and what the run recorded of it.
type InspectedExample struct {
	ID string `json:"id"`
	// Trial numbers the example's trial when the run ran it more than once.
	Trial int `json:"trial,omitempty"`
	// Verdict and Message are what the run's result recorded (a Test writes
	// one; "" when the run recorded none): not re-evaluated.
	Verdict string `json:"verdict,omitempty"`
	Message string `json:"message,omitempty"`
	// MultiTurn says the example was written with turns:.
	MultiTurn bool `json:"multiTurn,omitempty"`
	// Turns are the example's agent turns, as indexes into the
	// inspection's Turns, in script order.
	Turns []int `json:"turns"`
	// NotRun lists a multi-turn example's turns that were never sent (a
	// turn before them failed or was unknown), by number, with the
	// verdict the run recorded for them.
	NotRun []InspectedNotRun `json:"notRun,omitempty"`
	// Usage sums the agent's usage over the example's turns, JudgeUsage its
	// judge samples'; absent when it has none.
	Usage      *TokenUsage `json:"usage,omitempty"`
	JudgeUsage *TokenUsage `json:"judgeUsage,omitempty"`
}

// InspectedNotRun is a multi-turn example's turn that was never sent.
type InspectedNotRun struct {
	Turn    int    `json:"turn"`
	Verdict string `json:"verdict"`
	Message string `json:"message,omitempty"`
}

// InspectedRun is the run's identity from the journal's meta.
type InspectedRun struct {
	ID      string    `json:"runId"`
	Created time.Time `json:"created"`
	// Status: finished, cancelled or failed (recorded when the run ended),
	// running, or crashed-unfinished.
	Status        string `json:"status"`
	Command       string `json:"command"`
	AgentID       string `json:"agentId"`
	AgentRevision string `json:"agentRevision"`
	// AgentPath is the agent file the run was of (journal.RunMeta.AgentPath);
	// absent in journals kmx wrote before it recorded paths.
	AgentPath  string `json:"agentPath,omitempty"`
	KmxVersion string `json:"kmxVersion"`
}

// InspectSummary counts the top-level turns by state and the judge samples.
type InspectSummary struct {
	Turns        int `json:"turns"`
	Verified     int `json:"verified"`
	Incomplete   int `json:"incomplete"`
	Failed       int `json:"failed"`
	Cancelled    int `json:"cancelled"`
	JudgeSamples int `json:"judgeSamples"`
}

// InspectedTurn is one agent turn (or a judge turn whose example has no
// agent turn in the journal), in journal order.
type InspectedTurn struct {
	Example   string                `json:"example"`
	Purpose   string                `json:"purpose"`
	SessionID string                `json:"sessionId"`
	Turn      int                   `json:"turn"`
	Model     journal.ModelIdentity `json:"model"`
	// Input is the journaled input; empty when the turn never started.
	Input string `json:"input"`
	// Instructions is what an agent turn sent as its instructions (the
	// system prompt: the agent file's instructions, with an examples file
	// beside it the whole body), as journaled; withheld unless asked for
	// (HideContent), when InstructionsBytes and InstructionsLines still say
	// how much was sent. Absent for a judge turn and a turn never started.
	Instructions      *string `json:"instructions,omitempty"`
	InstructionsBytes int     `json:"instructionsBytes,omitempty"`
	InstructionsLines int     `json:"instructionsLines,omitempty"`
	// Answer is present only for a verified turn: the replayed answer,
	// identical to the journaled one.
	Answer *string `json:"answer,omitempty"`
	State  string  `json:"state"`
	// Reason says, in fixed text, why the turn did not verify.
	Reason string `json:"reason,omitempty"`
	// Error is the fixed-text error the journal recorded for a failed turn.
	Error string `json:"error,omitempty"`
	// Harness is the harness the session was placed on ("chat" or
	// "kmx-local-tools-v1").
	Harness string `json:"harness,omitempty"`
	// Tools is a tool turn's offered tool set, frozen at run start: names,
	// kmx.yaml states and sources (never the saved results themselves).
	Tools []InspectedTool `json:"tools,omitempty"`
	// ToolCalls is what the journal holds of a tool turn's calls, in batch
	// order, whether or not the turn verified (an incomplete trace stays
	// incomplete: State says so).
	ToolCalls    []InspectedToolCall `json:"toolCalls,omitempty"`
	JudgeSamples []JudgeSample       `json:"judgeSamples,omitempty"`
	// ExampleID is the example the turn belongs to (Example without a
	// multi-turn example's "/turn:N"); ScriptTurn is N, the turn's place
	// in its example's script (0: a one-turn example).
	ExampleID  string `json:"exampleId,omitempty"`
	ScriptTurn int    `json:"scriptTurn,omitempty"`
	// Verdict and VerdictMessage are what the run's result recorded for
	// this turn (a multi-turn example's turn) or its example; "" when it
	// recorded none. Not re-evaluated.
	Verdict        string `json:"verdict,omitempty"`
	VerdictMessage string `json:"verdictMessage,omitempty"`
	// DurationMs is a verified turn's journaled duration (absent when none
	// was journaled).
	DurationMs *float64 `json:"durationMs,omitempty"`
	// Usage is a verified turn's token usage over its model sends, as the
	// route reported it; absent when the route reported none (never 0).
	// JudgeUsage sums its judge samples' (absent without samples).
	Usage      *TokenUsage `json:"usage,omitempty"`
	JudgeUsage *TokenUsage `json:"judgeUsage,omitempty"`
	// Workspace is a kmx-workspace-tools-v1 turn's fixture and what the
	// journal holds of the files it changed.
	Workspace *InspectedWorkspace `json:"workspace,omitempty"`
}

// InspectedWorkspace is a workspace turn's fixture and, for a verified
// turn, its journaled outcome: each changed file as a diff of the
// fixture's bytes against the final ones, read from the journal alone
// (no fixture, no scratch copy).
type InspectedWorkspace struct {
	Fixture string `json:"fixture"`
	Hash    string `json:"hash,omitempty"`
	// Outcome says whether the journal holds the turn's outcome (only a
	// verified turn's is shown); Changes is empty when nothing changed.
	Outcome bool                  `json:"outcome"`
	Changes []InspectedFileChange `json:"changes"`
}

// InspectedFileChange is one file the turn added, modified or deleted.
type InspectedFileChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	// Diff is the unified diff's hunks (workspace.Diff without its ---/+++
	// header), fixture before, final after; absent when Note says why not.
	Diff string `json:"diff,omitempty"`
	// HashOnly: a side was over the journal's bound, so it is kept by its
	// hash only and cannot be diffed.
	HashOnly bool `json:"hashOnly,omitempty"`
	// Note says, in fixed text, why there is no diff.
	Note       string `json:"note,omitempty"`
	Size       int64  `json:"size"`
	Hash       string `json:"hash,omitempty"`
	BeforeSize int64  `json:"beforeSize,omitempty"`
	BeforeHash string `json:"beforeHash,omitempty"`
}

// InspectedTool is one offered tool of a tool turn.
type InspectedTool struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Source string `json:"source"`
	// Function is the name the model was offered the tool under, when it
	// differs from Name; Reference the declared reference that brought it
	// in, when it differs; Description, Parameters (a JSON schema) and
	// Table the definition offered for a tool of VS Code's reference table
	// or an MCP stub (absent: kmx's generic definition).
	Function    string `json:"function,omitempty"`
	Reference   string `json:"reference,omitempty"`
	Description string `json:"description,omitempty"`
	Parameters  string `json:"parameters,omitempty"`
	Table       string `json:"table,omitempty"`
}

// InspectedToolCall is one journaled call and, when journaled, its result.
type InspectedToolCall struct {
	Index int    `json:"index"`
	ID    string `json:"id"`
	// Name is the function name the model called.
	Name string `json:"name"`
	// Tool is the offered tool that name stands for, as the agent file
	// knows it (edit/editFiles for edit_editFiles), when it differs.
	Tool      string `json:"tool,omitempty"`
	Arguments string `json:"arguments"`
	// Source is live, recorded, unavailable or disabled; empty when the
	// call has no journaled result.
	Source string `json:"source,omitempty"`
	// Result is the text the model received; nil when none was journaled.
	Result *string `json:"result,omitempty"`
}

// JudgeSample is one llmJudge sample of an example, replayed like any turn.
type JudgeSample struct {
	SessionID string                `json:"sessionId"`
	Turn      int                   `json:"turn"`
	Model     journal.ModelIdentity `json:"model"`
	State     string                `json:"state"`
	Reason    string                `json:"reason,omitempty"`
	Rubric    string                `json:"rubric,omitempty"`
	// Reply is scored, inconclusive, malformed or none; Score is set only
	// when scored.
	Reply string `json:"reply"`
	Score *int   `json:"score,omitempty"`
	// Reasoning is the judge's reasoning, only when ReasoningShown.
	Reasoning *string `json:"reasoning,omitempty"`
	// Usage is the sample's token usage as the judge's route reported it;
	// absent when it reported none.
	Usage *TokenUsage `json:"usage,omitempty"`
}

// HideContent withholds every agent turn's instructions, keeping their
// size (the default display; kmx journal inspect --show-content keeps
// them).
func (in *Inspection) HideContent() {
	in.ContentShown = false
	for i := range in.Turns {
		in.Turns[i].Instructions = nil
	}
}

// HideReasoning withholds every judge sample's reasoning (the default
// display; kmx journal inspect --show-reasoning keeps it).
func (in *Inspection) HideReasoning() {
	in.ReasoningShown = false
	for i := range in.Turns {
		for k := range in.Turns[i].JudgeSamples {
			in.Turns[i].JudgeSamples[k].Reasoning = nil
		}
	}
}

// Inspect reopens the retained run runID in the journal folder dir and
// replays each complete turn through its harness against its recorded
// completions (and, on the tool harness, its recorded tool results), via the
// embedded Sessions' VerifyTurn. The models it could
// reach are a resolver that refuses and counts every call; that count and
// the harness's own are LiveCalls. Nothing is sent, nothing is judged, and
// no journal is created (journal.Open refuses a run that is not there).
//
// Without a deadline on ctx, Inspect is bounded by DefaultInspectBound.
// Errors are *Refusal with fixed text, or ctx's error.
func Inspect(ctx context.Context, dir, runID string) (*Inspection, error) {
	in, _, err := InspectWithResult(ctx, dir, runID)
	return in, err
}

// InspectWithResult is Inspect that also returns the run's journaled result record
// (nil when the run wrote none: a Run, an older kmx, or a run that did not
// get that far). The record is read from the same verified chain.
func InspectWithResult(ctx context.Context, dir, runID string) (*Inspection, *journal.RunResult, error) {
	return inspectWith(ctx, dir, runID, nil)
}

// inspectWith is inspect that hands the verified records and their
// sessions to keep (when not nil) once every turn has been replayed.
func inspectWith(ctx context.Context, dir, runID string, keep func([]journal.Record, []*inspectedSession)) (*Inspection, *journal.RunResult, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultInspectBound)
		defer cancel()
	}
	j, err := openForInspect(ctx, dir, runID)
	if err != nil {
		return nil, nil, err
	}
	defer j.Close()
	in := &Inspection{Schema: InspectSchema, Label: InspectLabel, ReasoningShown: true, ContentShown: true, Turns: []InspectedTurn{}}
	m := j.Meta()
	in.Run = InspectedRun{ID: runID, Status: j.Status(), Command: m.Command, AgentID: m.AgentID, AgentRevision: m.AgentRevision, AgentPath: m.AgentPath, KmxVersion: m.KmxVersion}
	in.Run.Created, _ = time.Parse("20060102T150405.000000000Z", runID[:len("20060102T150405.000000000Z")])
	if in.Run.Status == "" {
		in.Run.Status = journal.RunCrashed
		if locked, err := journal.IsLocked(dir, runID); err == nil && locked {
			in.Run.Status = journal.RunRunning
		}
	}

	recs, err := j.Records(ctx, "")
	if err != nil {
		return nil, nil, readRefusal(ctx, runID, err)
	}
	sess, result := groupSessions(recs)

	var refused atomic.Int64
	emb, err := sessions.Start(ctx, sessions.Options{Journal: j, Resolve: func(string, route.Identity) (route.Model, error) {
		refused.Add(1)
		return nil, errors.New("inspection never calls a model")
	}})
	if err != nil {
		return nil, nil, readRefusal(ctx, runID, err)
	}
	defer emb.Close()
	client := emb.Client()

	if err := replayAll(ctx, client, sess); err != nil {
		return nil, nil, readRefusal(ctx, runID, err)
	}
	agentAt := map[string]int{}   // example ID -> index in in.Turns of its first agent turn
	sessionAt := map[string]int{} // agent session ID -> index in in.Turns of its first turn
	var orphans []*inspectedSession
	for _, s := range sess {
		for _, vt := range s.verified {
			in.LiveCalls += int(vt.resp.GetLiveCalls())
		}
		if s.placed.Purpose == invocation.PurposeJudge {
			orphans = append(orphans, s)
			continue
		}
		for _, vt := range s.verified {
			t := s.turn(vt)
			if _, seen := agentAt[t.Example]; !seen {
				agentAt[t.Example] = len(in.Turns)
			}
			if _, seen := sessionAt[s.id]; !seen {
				sessionAt[s.id] = len(in.Turns)
			}
			in.Turns = append(in.Turns, t)
		}
	}
	// Judge samples belong to the agent turn whose answer they judged, as
	// the run's result names it (with trials, each trial's own); in a
	// journal without those names, to their example's first agent turn. A
	// judge session whose example has none is shown as a turn of its own.
	judged := judgedSessions(result)
	for _, s := range orphans {
		i, ok := sessionAt[judged[s.id]]
		if !ok {
			i, ok = agentAt[s.placed.ExampleID]
		}
		for _, vt := range s.verified {
			if ok {
				js := s.sample(vt)
				in.Turns[i].JudgeSamples = append(in.Turns[i].JudgeSamples, js)
				in.Summary.JudgeSamples++
				if js.State == TurnVerified {
					addUsage(&in.Turns[i].JudgeUsage, js.Usage)
				}
			} else {
				in.Turns = append(in.Turns, s.turn(vt))
			}
		}
	}
	in.LiveCalls += int(refused.Load())
	groupExamples(in, result)
	if result != nil {
		in.Comparison = result.Comparison
	}
	for _, t := range in.Turns {
		in.Summary.Turns++
		switch t.State {
		case TurnVerified:
			in.Summary.Verified++
		case TurnFailed:
			in.Summary.Failed++
		case TurnCancelled:
			in.Summary.Cancelled++
		default:
			in.Summary.Incomplete++
		}
	}
	if keep != nil {
		keep(recs, sess)
	}
	return in, result, nil
}

// sourceRun is a retained run as a re-grade reads it: the inspection (every
// turn replayed with zero model calls), its result record, its
// chain-verified records and their sessions.
type sourceRun struct {
	in       *Inspection
	result   *journal.RunResult
	recs     []journal.Record
	sessions []*inspectedSession
}

// inspectSource inspects runID and keeps what a re-grade copies from it.
func inspectSource(ctx context.Context, dir, runID string) (*sourceRun, error) {
	src := &sourceRun{}
	var err error
	src.in, src.result, err = inspectWith(ctx, dir, runID, func(recs []journal.Record, sess []*inspectedSession) {
		src.recs, src.sessions = recs, sess
	})
	if err != nil {
		return nil, err
	}
	return src, nil
}

// replayWorkers is how many VerifyTurn calls are in flight at once. The
// journal reads are serialized by the journal itself; the gRPC and harness
// work of one turn overlaps another's reads.
const replayWorkers = 4

// replayAll verifies every turn of every session, filling each session's
// verified list in turn order. The first error stops the rest.
func replayAll(ctx context.Context, client sessionspb.SessionsClient, sess []*inspectedSession) error {
	type job struct {
		s *inspectedSession
		i int
	}
	for _, s := range sess {
		for _, n := range s.turnNumbers() {
			s.verified = append(s.verified, verifiedTurn{n: n})
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range replayWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jb := range jobs {
				vt := &jb.s.verified[jb.i]
				v, err := client.VerifyTurn(ctx, &sessionspb.VerifyTurnRequest{SessionId: jb.s.id, Turn: int32(vt.n)})
				if err != nil {
					cancel(err)
					continue
				}
				vt.resp = v
			}
		}()
	}
feed:
	for _, s := range sess {
		for i := range s.verified {
			select {
			case jobs <- job{s, i}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	return context.Cause(ctx)
}

// openForInspect opens the run with journal.Open, turning every failure
// into fixed text: no SQL or driver message reaches the caller.
func openForInspect(ctx context.Context, dir, runID string) (*journal.Journal, error) {
	if !journal.ValidRunID(runID) {
		return nil, invocation.RefuseIn(orAnotherRun("run kmx journal list and pass a run ID from it (a journal file name without .db)"), nil,
			"%q is not a run ID (expected a name like 20261130T162341.123456789Z-0a1b2c3d)", runID)
	}
	if err := state.CheckReadableDir(dir); err != nil {
		return nil, stateRefusal(err, "there are no retained runs: the journal folder does not exist yet")
	}
	if _, err := os.Lstat(filepath.Join(dir, runID+".db")); errors.Is(err, fs.ErrNotExist) {
		return nil, invocation.RefuseIn(func(w problem.Words) string {
			if l := w(problem.Runs, ""); l != "" {
				return "run " + l + " to see the retained runs"
			}
			return "pass the run ID a Test result named, of a run still retained (kmx keeps the newest 20 runs)"
		}, nil, "there is no retained run %s (it may have been cleared or removed by retention)", runID)
	}
	j, err := journal.Open(ctx, dir, runID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, stateRefusal(err, fmt.Sprintf("the journal of run %s cannot be read: it is damaged, incomplete, or from another kmx version", runID))
	}
	return j, nil
}

func stateRefusal(err error, otherwise string) error {
	var unsafe *state.UnsafeError
	if errors.As(err, &unsafe) {
		return &invocation.Refusal{Msg: unsafe.Error(), Next: unsafe.Fix}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return invocation.RefuseIn(func(w problem.Words) string {
			return w(problem.Call, "") + " " + w(problem.TestCmd, "") + " or " + w(problem.RunCmd, "") + " first"
		}, nil, "%s", otherwise)
	}
	return invocation.RefuseIn(orAnotherRun("run kmx journal list to check the run; kmx journal clear RUN removes it"), nil, "%s", otherwise)
}

// orAnotherRun is a next step that names kmx journal's commands, or where
// the front has no list of runs (MCP: each Test result names its run),
// another run or none.
func orAnotherRun(commandLine string) problem.Sentence {
	return func(w problem.Words) string {
		if w(problem.Runs, "") != "" {
			return commandLine
		}
		return "pass another run's ID as " + w(problem.From, "") + " (each Test result names its run), or test afresh without it"
	}
}

// readRefusal is the fixed-text refusal for a journal that opened but whose
// records cannot be read or replayed.
func readRefusal(ctx context.Context, runID string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, journal.ErrTampered) {
		next := (&journal.TamperedError{RunID: runID}).NextStep()
		return invocation.RefuseIn(orAnotherRun(next), nil,
			"the journal of run %s was altered after it was written: its records cannot be trusted, so nothing was replayed", runID)
	}
	return invocation.RefuseIn(orAnotherRun("run kmx journal list to check the run; kmx journal clear "+runID+" removes it"), nil,
		"the journal of run %s cannot be read: it is damaged, incomplete, or from another kmx version", runID)
}

// inspectedSession is one session's records, decoded as far as they go.
// Malformed records are left for VerifyTurn to name; this only gathers
// what to display.
type inspectedSession struct {
	id       string
	placed   journal.SessionPlaced
	started  map[int]journal.TurnStarted
	terminal map[int]journal.TurnTerminal
	calls    map[int][]InspectedToolCall
	order    []int // turn numbers in journal order
	verified []verifiedTurn
}

type verifiedTurn struct {
	n    int
	resp *sessionspb.VerifyTurnResponse
}

func groupSessions(recs []journal.Record) ([]*inspectedSession, *journal.RunResult) {
	var out []*inspectedSession
	var result *journal.RunResult
	byID := map[string]*inspectedSession{}
	for _, r := range recs {
		if r.SessionID == journal.RunSession {
			// Run-level records are not turns. A result that does not
			// decode is ignored: verdicts are then "not recorded".
			var v journal.RunResult
			if r.Kind == journal.KindRunResult && r.Version == journal.SchemaVersion && journal.Decode(r.Payload, &v) == nil {
				result = &v
			}
			continue
		}
		s := byID[r.SessionID]
		if s == nil {
			s = &inspectedSession{id: r.SessionID, started: map[int]journal.TurnStarted{}, terminal: map[int]journal.TurnTerminal{},
				calls: map[int][]InspectedToolCall{}}
			byID[r.SessionID] = s
			out = append(out, s)
		}
		if r.Kind != journal.KindSessionPlaced && r.Turn >= 1 && !s.hasTurn(r.Turn) {
			s.order = append(s.order, r.Turn)
		}
		switch r.Kind {
		case journal.KindSessionPlaced:
			var v journal.SessionPlaced
			if journal.Decode(r.Payload, &v) == nil {
				s.placed = v
			}
		case journal.KindTurnStarted:
			var v journal.TurnStarted
			if journal.Decode(r.Payload, &v) == nil {
				s.started[r.Turn] = v
			}
		case journal.KindTurnTerminal:
			var v journal.TurnTerminal
			if journal.Decode(r.Payload, &v) == nil {
				s.terminal[r.Turn] = v
			}
		case journal.KindToolCall:
			var v journal.ToolCall
			if journal.Decode(r.Payload, &v) == nil {
				s.calls[r.Turn] = append(s.calls[r.Turn], InspectedToolCall{Index: v.Index, ID: v.ID, Name: v.Name, Arguments: v.Arguments})
			}
		case journal.KindToolResult:
			var v journal.ToolResult
			cs := s.calls[r.Turn]
			if journal.Decode(r.Payload, &v) == nil && len(cs) > 0 && cs[len(cs)-1].ID == v.ID && cs[len(cs)-1].Result == nil {
				res := v.Result
				cs[len(cs)-1].Source, cs[len(cs)-1].Result = v.Source, &res
			}
		}
	}
	return out, result
}

func (s *inspectedSession) hasTurn(n int) bool {
	for _, t := range s.order {
		if t == n {
			return true
		}
	}
	return false
}

// turnNumbers are the turns to replay; a session placed but never started
// still has its first turn, which replays as incomplete.
func (s *inspectedSession) turnNumbers() []int {
	if len(s.order) == 0 {
		return []int{1}
	}
	return s.order
}

// state maps a replay result and the journaled terminal to a turn state:
// verified only when the replay verified; otherwise what the journal says,
// and incomplete when it says nothing (or says completed, yet the turn did
// not verify).
func (s *inspectedSession) state(vt verifiedTurn) (string, string) {
	if vt.resp.GetVerified() && vt.resp.GetLiveCalls() == 0 {
		return TurnVerified, ""
	}
	reason := vt.resp.GetReason()
	if reason == "" {
		reason = sessions.ReasonReplayLiveCall
	}
	switch s.terminal[vt.n].State {
	case journal.StateFailed:
		return TurnFailed, reason
	case journal.StateCancelled:
		return TurnCancelled, reason
	}
	return TurnIncomplete, reason
}

func (s *inspectedSession) turn(vt verifiedTurn) InspectedTurn {
	st, reason := s.state(vt)
	t := InspectedTurn{
		Example: s.placed.ExampleID, Purpose: s.placed.Purpose, SessionID: s.id, Turn: vt.n,
		Model: s.placed.Model, Input: s.started[vt.n].Input, State: st, Reason: reason,
		Harness: s.placed.Harness, ToolCalls: s.calls[vt.n],
	}
	for _, o := range s.placed.Tools {
		t.Tools = append(t.Tools, InspectedTool{Name: o.Name, State: o.State, Source: o.Source,
			Function: o.Function, Reference: o.Reference, Description: o.Description, Parameters: o.Parameters, Table: o.Table})
		if o.Function == "" {
			continue
		}
		for i := range t.ToolCalls {
			if t.ToolCalls[i].Name == o.Function && o.Function != o.Name {
				t.ToolCalls[i].Tool = o.Name
			}
		}
	}
	t.ExampleID, t.ScriptTurn = splitTurnName(t.Example)
	if st == TurnVerified {
		a := vt.resp.GetAnswer()
		t.Answer = &a
		t.DurationMs, t.Usage = measuresOf(vt)
	}
	if st == TurnFailed {
		t.Error = s.terminal[vt.n].Error
	}
	if w := s.placed.Workspace; w != nil {
		t.Workspace = &InspectedWorkspace{Fixture: w.Fixture, Hash: w.Hash, Changes: []InspectedFileChange{}}
		if st == TurnVerified {
			if o := judge.DecodeOutcome(vt.resp.GetWorkspaceOutcomeJson()); o != nil {
				t.Workspace.Outcome = true
				for _, c := range o.Changes {
					t.Workspace.Changes = append(t.Workspace.Changes, fileChange(c))
				}
			}
		}
	}
	if started, ok := s.started[vt.n]; ok && s.placed.Purpose == invocation.PurposeAgent {
		instr := started.Instructions
		t.Instructions, t.InstructionsBytes, t.InstructionsLines = &instr, len(instr), lineCount(instr)
	}
	return t
}

// splitTurnName splits a session's example name into its example ID and,
// for a multi-turn example's turn (agentfile.TurnName), the turn number.
func splitTurnName(name string) (string, int) {
	i := strings.LastIndex(name, turnMark)
	if i < 0 {
		return name, 0
	}
	n, err := strconv.Atoi(name[i+len(turnMark):])
	if err != nil || n < 1 || agentfile.TurnName(name[:i], n) != name {
		return name, 0
	}
	return name[:i], n
}

// turnMark separates an example ID from its turn in agentfile.TurnName.
const turnMark = "/turn:"

// measuresOf reads a verified turn's journaled duration and usage.
func measuresOf(vt verifiedTurn) (*float64, *TokenUsage) {
	var d *float64
	if us := vt.resp.GetDurationUs(); us > 0 {
		f := float64(us) / 1000
		d = &f
	}
	var u *TokenUsage
	if pu := vt.resp.GetUsage(); pu != nil {
		u = &TokenUsage{PromptTokens: int(pu.GetPromptTokens()), CompletionTokens: int(pu.GetCompletionTokens()), TotalTokens: int(pu.GetTotalTokens())}
	}
	return d, u
}

// fileChange is one journaled change as the replay panel shows it: the
// hunks of its unified diff, or a fixed note saying why there are none.
func fileChange(c workspace.Change) InspectedFileChange {
	fc := InspectedFileChange{Path: c.Path, Kind: c.Kind, Size: c.Size, Hash: c.Hash, BeforeSize: c.BeforeSize, BeforeHash: c.BeforeHash}
	switch {
	case c.NotRegular:
		fc.Note = "no longer a regular file: its content is unknown"
	case c.Omitted || c.BeforeOmitted:
		fc.HashOnly = true
		fc.Note = fmt.Sprintf("over the journal's bound (%d KiB a file, %d KiB a turn): kept by hash only, so it cannot be diffed",
			workspace.MaxJournaledFileBytes>>10, workspace.MaxJournaledBytes>>10)
	case !utf8.Valid(c.Content) || !utf8.Valid(c.BeforeContent):
		fc.Note = "not text (not valid UTF-8): compared by hash only"
	default:
		d := workspace.Diff(c)
		// Drop the ---/+++ header: the panel names the file itself.
		for range 2 {
			if i := strings.IndexByte(d, '\n'); i >= 0 {
				d = d[i+1:]
			}
		}
		fc.Diff = d
		if d == "" {
			fc.Note = "empty on both sides"
		}
	}
	return fc
}

// judgedSessions maps each judge session the run's result names to the
// agent session whose answer it judged (empty without a result).
func judgedSessions(r *journal.RunResult) map[string]string {
	out := map[string]string{}
	if r == nil {
		return out
	}
	for _, re := range r.Examples {
		for _, js := range re.JudgeSessions {
			out[js] = re.SessionID
		}
		for _, rt := range re.Turns {
			for _, js := range rt.JudgeSessions {
				out[js] = rt.SessionID
			}
		}
	}
	return out
}

// groupExamples fills in.Examples, the turns' recorded verdicts and the
// usage sums. With a result record the examples follow it (file order,
// then trial order), each turn matched to its recorded verdict by session
// ID; agent turns it does not name follow in journal order, grouped by
// example.
func groupExamples(in *Inspection, r *journal.RunResult) {
	bySession := map[string]int{}
	for i, t := range in.Turns {
		if t.Purpose == invocation.PurposeAgent && t.Example != "" {
			if _, seen := bySession[t.SessionID]; !seen {
				bySession[t.SessionID] = i
			}
		}
	}
	used := map[int]bool{}
	take := func(sessionID string) (int, bool) {
		i, ok := bySession[sessionID]
		if !ok || sessionID == "" || used[i] {
			return 0, false
		}
		used[i] = true
		return i, true
	}
	if r != nil {
		for _, re := range r.Examples {
			ex := InspectedExample{ID: re.ID, Trial: re.Trial, Verdict: re.Verdict, Message: re.Message, Turns: []int{}}
			if r.Trials <= 1 {
				ex.Trial = 0
			}
			if len(re.Turns) > 0 {
				ex.MultiTurn = true
				for _, rt := range re.Turns {
					i, ok := take(rt.SessionID)
					if !ok {
						ex.NotRun = append(ex.NotRun, InspectedNotRun{Turn: rt.Turn, Verdict: rt.Verdict, Message: rt.Message})
						continue
					}
					in.Turns[i].Verdict, in.Turns[i].VerdictMessage = rt.Verdict, rt.Message
					ex.Turns = append(ex.Turns, i)
				}
			} else if i, ok := take(re.SessionID); ok {
				in.Turns[i].Verdict, in.Turns[i].VerdictMessage = re.Verdict, re.Message
				ex.Turns = append(ex.Turns, i)
			}
			in.Examples = append(in.Examples, ex)
		}
	}
	for i, t := range in.Turns {
		if t.Purpose != invocation.PurposeAgent || t.Example == "" || used[i] {
			continue
		}
		used[i] = true
		n := len(in.Examples)
		if t.ScriptTurn > 1 && n > 0 && in.Examples[n-1].ID == t.ExampleID && in.Examples[n-1].Verdict == "" {
			in.Examples[n-1].Turns = append(in.Examples[n-1].Turns, i)
			continue
		}
		in.Examples = append(in.Examples, InspectedExample{ID: t.ExampleID, MultiTurn: t.ScriptTurn > 0, Turns: []int{i}})
	}
	var run InspectedUsage
	for k := range in.Examples {
		ex := &in.Examples[k]
		for _, i := range ex.Turns {
			t := in.Turns[i]
			if t.State == TurnVerified {
				addUsage(&ex.Usage, t.Usage)
			}
			if t.JudgeUsage != nil {
				addUsage(&ex.JudgeUsage, t.JudgeUsage)
			}
		}
	}
	for _, t := range in.Turns {
		switch {
		case t.State != TurnVerified:
		case t.Purpose == invocation.PurposeAgent:
			addUsage(&run.Agent, t.Usage)
		case t.Purpose == invocation.PurposeJudge:
			addUsage(&run.Judge, t.Usage)
		}
		if t.JudgeUsage != nil {
			addUsage(&run.Judge, t.JudgeUsage)
		}
	}
	if run.Agent != nil || run.Judge != nil {
		in.Usage = &run
	}
}

// lineCount is how many lines text holds (a last line without a newline
// counts; an empty text has none).
func lineCount(text string) int {
	if text == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(text, "\n"), "\n") + 1
}

func (s *inspectedSession) sample(vt verifiedTurn) JudgeSample {
	st, reason := s.state(vt)
	js := JudgeSample{SessionID: s.id, Turn: vt.n, Model: s.placed.Model, State: st, Reason: reason, Reply: ReplyNone}
	var p struct {
		Rubric string `json:"rubric"`
		Input  string `json:"input"`
		Answer string `json:"answer"`
	}
	if json.Unmarshal([]byte(s.started[vt.n].Input), &p) == nil {
		js.Rubric = p.Rubric
	}
	if st != TurnVerified {
		return js
	}
	_, js.Usage = measuresOf(vt)
	r, err := judge.ParseReply(vt.resp.GetAnswer())
	switch {
	case err != nil:
		js.Reply = ReplyMalformed
	case r.Score == nil:
		js.Reply = ReplyInconclusive
		js.Reasoning = &r.Reasoning
	default:
		js.Reply, js.Score = ReplyScored, r.Score
		js.Reasoning = &r.Reasoning
	}
	return js
}
