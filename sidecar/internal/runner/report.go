package runner

import (
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// Label is on every result kmx produces.
const Label = "local preview"

// ReportSchema versions the safe JSON report (kmx test --json, MCP, LSP).
const ReportSchema = "kmx.localpreview.report/v1"

// Verdicts of an example and of a file.
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictUnknown = "unknown"
	VerdictRefused = "refused"
	// VerdictSkipped is a file a command over several files (kmx test
	// FOLDER) did not run because it has no examples: neither a pass nor
	// an error. One file named alone is refused instead.
	VerdictSkipped = "skipped"
)

// Report is the safe report of one invocation: verdicts and assertion
// results, never instructions, inputs or credentials (answers only when the
// caller asked to see content, as Run does).
type Report struct {
	Schema string `json:"schema"`
	Label  string `json:"label"`
	// Command is the invocation's mode (invocation.Mode): "run" or "test".
	Command string `json:"command"`
	// RunID is the journal file's name without ".db"; empty when refused.
	RunID       string      `json:"runId,omitempty"`
	JournalPath string      `json:"journalPath,omitempty"`
	Agent       AgentRef    `json:"agent"`
	Route       RouteReport `json:"route"`
	// Selection is "full" or "subset".
	Selection string `json:"selection"`
	// Verdict of the whole file: pass only when every selected example passed.
	Verdict    string  `json:"verdict"`
	Journaled  bool    `json:"journaled"`
	DurationMs float64 `json:"durationMs"`
	Summary    Summary `json:"summary"`
	// ToolSettings is every declared tool's kmx.yaml state, frozen at run
	// start; absent when the file declares no tools or nothing ran.
	ToolSettings []invocation.ToolSetting `json:"toolSettings,omitempty"`
	// Tools summarizes the tools in a few figures (ToolSummary.Line);
	// absent when the file declares no tools or nothing ran.
	Tools    *ToolSummary    `json:"toolSummary,omitempty"`
	Examples []ExampleResult `json:"examples"`
	// Retention is set for a completed non-pass Test: whether its failure
	// projection was retained for Explain.
	Retention *RetentionReport `json:"retention,omitempty"`
	// Refusal is set when nothing ran: what is wrong and what to change.
	Refusal *RefusalReport `json:"refusal,omitempty"`
	// Trials is how many times each example ran, when more than once.
	Trials int `json:"trials,omitempty"`
	// Regrade is set on a re-grade (kmx test FILE --from RUN).
	Regrade *RegradeReport `json:"regrade,omitempty"`
	// Capture is set when a live call answered a pending recording: whether
	// it was saved into the file (or returned as an edit), and why not.
	Capture *CaptureReport `json:"capture,omitempty"`
	// Stubbed names the tools that answered "This tool is not available in
	// this test." (source unavailable) in this run, and how to give them
	// real results; absent when none did. Never arguments or results.
	Stubbed *StubbedReport `json:"stubbed,omitempty"`
	// Usage is the run's token usage: the agent's over every verified
	// turn, the judge's over every judge sample, each as the routes
	// reported it. Absent when nothing ran.
	Usage *UsageReport `json:"usage,omitempty"`
}

// StubbedReport is the run's stubbed tools, named once.
type StubbedReport struct {
	// Tools are the stubbed tools, as the agent file names them
	// (edit/editFiles), in first-call order.
	Tools []string `json:"tools"`
	// Examples are the examples whose calls were stubbed.
	Examples []string `json:"examples"`
	// Message says what the model got; Next how to give real results.
	Message string `json:"message"`
	Next    string `json:"next"`
}

// StubbedNext is how to give a stubbed tool real results.
const StubbedNext = "give each a real result with a recording in its example: " +
	"tools: {NAME: {recorded: {calls: [{arguments: {...}, result: ...}]}}} (see docs/tools.md)"

// stubbedOf collects the examples' unavailable sources into one
// StubbedReport; nil when no call was stubbed.
func stubbedOf(examples []ExampleResult) *StubbedReport {
	var s StubbedReport
	seen := map[string]bool{}
	for _, ex := range examples {
		stubbed := false
		for _, ts := range ex.ToolSources {
			if ts.Source != localtools.SourceUnavailable {
				continue
			}
			stubbed = true
			if !seen[ts.Name] {
				seen[ts.Name] = true
				s.Tools = append(s.Tools, ts.Name)
			}
		}
		if stubbed {
			s.Examples = append(s.Examples, ex.ID)
		}
	}
	if len(s.Tools) == 0 {
		return nil
	}
	s.Message = "answered \"" + localtools.UnavailableText + "\" (no recording or binding answered them)"
	s.Next = StubbedNext
	return &s
}

// UsageReport is token usage kept apart by purpose.
type UsageReport struct {
	Agent Usage `json:"agent"`
	Judge Usage `json:"judge"`
}

// Usage is token usage summed over model sends. Unreported counts the
// turns (or judge samples) whose route reported none: their tokens are in
// no sum, so a total with Unreported > 0 is a lower bound.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
	Unreported       int `json:"unreported,omitempty"`
}

// UsageLine is the run's token usage as the routes reported it, the
// agent's and the judge's apart ("tokens: agent 178 (prompt 146,
// completion 32)"), as kmx test and kmx mcp print it; "" when nothing ran.
func UsageLine(u *UsageReport) string {
	if u == nil {
		return ""
	}
	turns := func(n int) string {
		if n == 1 {
			return "1 turn"
		}
		return fmt.Sprintf("%d turns", n)
	}
	part := func(who string, x Usage) string {
		if x.Unreported > 0 && x.TotalTokens == 0 && x.PromptTokens == 0 && x.CompletionTokens == 0 {
			return fmt.Sprintf("%s not reported (%s)", who, turns(x.Unreported))
		}
		s := fmt.Sprintf("%s %d (prompt %d, completion %d)", who, x.TotalTokens, x.PromptTokens, x.CompletionTokens)
		if x.Unreported > 0 {
			s += fmt.Sprintf(", %s reported no usage", turns(x.Unreported))
		}
		return s
	}
	line := "tokens: " + part("agent", u.Agent)
	if u.Judge != (Usage{}) {
		line += " · " + part("judge", u.Judge)
	}
	return line
}

// add sums u (nil: one turn that reported none) into s.
func (s *Usage) add(u *Usage) {
	if u == nil {
		s.Unreported++
		return
	}
	s.PromptTokens += u.PromptTokens
	s.CompletionTokens += u.CompletionTokens
	s.TotalTokens += u.TotalTokens
	s.Unreported += u.Unreported
}

// RegradeReport says what a re-grade reused and what it sent.
type RegradeReport struct {
	SourceRun string `json:"sourceRun"`
	// AgentCalls is the agent model calls this re-grade made: always 0.
	AgentCalls int `json:"agentCalls"`
	// JudgeCalls is the fresh judge samples sent; ReusedJudgeSamples the
	// journaled ones reused.
	JudgeCalls         int `json:"judgeCalls"`
	ReusedJudgeSamples int `json:"reusedJudgeSamples"`
	// Replayed is how many examples' answers replayed from the source run.
	Replayed int `json:"replayed"`
	// NotRegraded is how many examples were refused (changed prompt,
	// input or model, or no verified answer in the source run).
	NotRegraded int `json:"notRegraded"`
}

// AgentRef identifies the agent file a report is about.
type AgentRef struct {
	ID string `json:"id,omitempty"`
	// Name is the header's display name, absent when it has none.
	Name string `json:"name,omitempty"`
	Path string `json:"path"`
	// ExamplesPath is the sibling examples file when the examples live
	// there: the examples' ranges are positions in it.
	ExamplesPath string `json:"examplesPath,omitempty"`
	Revision     string `json:"revision,omitempty"`
	// SettingsRevision digests the tool settings the run froze: a result
	// is out of date when kmx.yaml changes, even if Revision does not.
	SettingsRevision string `json:"settingsRevision,omitempty"`
}

// RouteReport names the model routes used, never an endpoint's credential.
type RouteReport struct {
	Agent Identity  `json:"agent"`
	Judge *Identity `json:"judge,omitempty"`
}

// Identity is a route and model name.
type Identity struct {
	Route string `json:"route"`
	Model string `json:"model"`
}

// Summary counts example verdicts.
type Summary struct {
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Unknown int `json:"unknown"`
	Refused int `json:"refused"`
}

// Counts is the summary as every front writes it: "N pass, N fail, N
// unknown" (refusals are the front's to add: a refused run says so whole).
func (s Summary) Counts() string {
	return fmt.Sprintf("%d pass, %d fail, %d unknown", s.Pass, s.Fail, s.Unknown)
}

// ExampleResult is one selected example's outcome.
type ExampleResult struct {
	ID string `json:"id"`
	// AdHoc marks the ad-hoc input of a Run; it has no assertions or verdict
	// beyond whether its turn completed and replay-verified.
	AdHoc   bool   `json:"adHoc,omitempty"`
	Verdict string `json:"verdict"`
	// Message says why the verdict is what it is, in one line.
	Message    string  `json:"message,omitempty"`
	Journaled  bool    `json:"journaled"`
	Verified   bool    `json:"verified"`
	DurationMs float64 `json:"durationMs"`
	// Range is the example's "- id:" line in the source.
	Range      *agentfile.Range        `json:"range,omitempty"`
	Assertions []judge.AssertionResult `json:"assertions,omitempty"`
	// Deciding is the index of the assertion that decided a fail or
	// unknown verdict, when one did.
	Deciding      *int             `json:"deciding,omitempty"`
	DecidingRange *agentfile.Range `json:"decidingRange,omitempty"`
	// Answer is present only when content was requested (Run shows it).
	Answer *string `json:"answer,omitempty"`
	// ToolCalls counts Enabled tool dispatches of a replay-verified tool
	// turn (Disabled answers are not dispatches); omitted when zero.
	ToolCalls int `json:"toolCalls,omitempty"`
	// ToolSources names each called tool's source: live, recorded or
	// unavailable. Never arguments, results or definitions.
	ToolSources []ToolSource `json:"toolSources,omitempty"`
	// Trials is set when the example ran more than once (--trials N, N>1):
	// the counts behind the verdict, which is pass only when every trial
	// passed, fail when any failed, else unknown.
	Trials *TrialCounts `json:"trials,omitempty"`
	// TrialResults are the trials in order.
	TrialResults []TrialResult `json:"trialResults,omitempty"`
	// Workspace is what the example's turn changed in its scratch copy of
	// its fixture workspace: paths and counts only, never content.
	Workspace *WorkspaceSummary `json:"workspace,omitempty"`
	// KeptWorkspace is the scratch copy's folder, kept by --keep-workspace.
	KeptWorkspace string `json:"keptWorkspace,omitempty"`
	// Turns are a multi-turn example's turns, in order: each turn's
	// verdict, measures and assertions. A turn after one that did not pass
	// is "not run". The example's Assertions, Deciding and DecidingRange
	// are those of its deciding turn (the first that did not pass).
	Turns []TurnResult `json:"turns,omitempty"`
	// Usage is the agent's token usage over the example's verified turns;
	// JudgeUsage the judge's over its samples.
	Usage      *Usage `json:"usage,omitempty"`
	JudgeUsage *Usage `json:"judgeUsage,omitempty"`
	// sessionID is the agent turn's journal session (recorded in the
	// run's result record, not reported); judgeSessions are the judge
	// samples' sessions of a one-turn example (each multi-turn turn has
	// its own), so a read-back shows them on the answer they judged.
	sessionID     string
	judgeSessions []string
	// workspace is the verified turn's outcome, for the CLI's diff of a
	// failing example (--show-content); never in the JSON report.
	workspace *workspace.Outcome
}

// WorkspaceSummary is an example's fixture and what its turn changed:
// paths and kinds, no content.
type WorkspaceSummary struct {
	Fixture string          `json:"fixture"`
	Changed []ChangedFile   `json:"changed"`
	Counts  WorkspaceCounts `json:"counts"`
}

// ChangedFile is one file the turn added, modified or deleted.
type ChangedFile struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// WorkspaceCounts counts the changed files by kind.
type WorkspaceCounts struct {
	Added    int `json:"added"`
	Modified int `json:"modified"`
	Deleted  int `json:"deleted"`
}

// workspaceSummary is the report's view of an outcome.
func workspaceSummary(fixture string, o *workspace.Outcome) *WorkspaceSummary {
	if o == nil {
		return nil
	}
	s := &WorkspaceSummary{Fixture: fixture, Changed: []ChangedFile{}}
	for _, c := range o.Changes {
		s.Changed = append(s.Changed, ChangedFile{Path: c.Path, Kind: c.Kind})
		switch c.Kind {
		case workspace.Added:
			s.Counts.Added++
		case workspace.Modified:
			s.Counts.Modified++
		case workspace.Deleted:
			s.Counts.Deleted++
		}
	}
	return s
}

// WorkspaceOutcome is the example's verified workspace outcome (nil when
// it has none), for a front's diff of a failing example.
func (r ExampleResult) WorkspaceOutcome() *workspace.Outcome { return r.workspace }

// VerdictNotRun is a turn of a multi-turn example that was not sent
// because an earlier turn did not pass: never a pass.
const VerdictNotRun = "not run"

// TurnResult is one turn of a multi-turn example.
type TurnResult struct {
	Turn    int    `json:"turn"`
	Verdict string `json:"verdict"`
	Message string `json:"message,omitempty"`
	// Range is the turn's "- input:" line.
	Range     *agentfile.Range `json:"range,omitempty"`
	Journaled bool             `json:"journaled"`
	Verified  bool             `json:"verified"`
	// DurationMs is the turn's journaled duration (absent when not run or
	// not verified).
	DurationMs    *float64                `json:"durationMs,omitempty"`
	Usage         *Usage                  `json:"usage,omitempty"`
	Assertions    []judge.AssertionResult `json:"assertions,omitempty"`
	Deciding      *int                    `json:"deciding,omitempty"`
	DecidingRange *agentfile.Range        `json:"decidingRange,omitempty"`
	Answer        *string                 `json:"answer,omitempty"`
	ToolCalls     int                     `json:"toolCalls,omitempty"`
	ToolSources   []ToolSource            `json:"toolSources,omitempty"`
	// Workspace is, on an example with a fixture workspace, what the
	// scratch copy holds changed after this turn, relative to the fixture:
	// the changes of this turn and every earlier one.
	Workspace *WorkspaceSummary `json:"workspace,omitempty"`
	// Trials is set on the turns of an example that ran more than once:
	// the turn's outcomes over the trials (NotRun counts the trials that
	// never sent it). Its verdict is then over the trials as the
	// example's is (pass only when it passed in every trial, fail when it
	// failed in any, not run when no trial sent it, else unknown), its
	// message says what happened to it in each trial, its usage and
	// duration are summed over them, and its assertions are its deciding
	// trial's. Each trial's own turns are in the example's TrialResults.
	Trials        *TrialCounts `json:"trials,omitempty"`
	sessionID     string
	judgeSessions []string
}

// TrialResult is one trial of an example: what a plain Test reports for it.
type TrialResult struct {
	Verdict    string                  `json:"verdict"`
	Message    string                  `json:"message,omitempty"`
	Journaled  bool                    `json:"journaled"`
	Verified   bool                    `json:"verified"`
	DurationMs float64                 `json:"durationMs"`
	Assertions []judge.AssertionResult `json:"assertions,omitempty"`
	// Turns are a multi-turn example's turns in this trial.
	Turns []TurnResult `json:"turns,omitempty"`
	// Usage is the agent's token usage over this trial's verified turns;
	// JudgeUsage the judge's over the samples that judged this trial's
	// answers (absent without samples).
	Usage         *Usage `json:"usage,omitempty"`
	JudgeUsage    *Usage `json:"judgeUsage,omitempty"`
	sessionID     string
	judgeSessions []string
}

// TrialCounts are an example's outcomes over N trials. JudgeSplits counts
// the trials in which an llmJudge assertion's two samples disagreed.
type TrialCounts struct {
	N           int  `json:"n"`
	Pass        int  `json:"pass"`
	Fail        int  `json:"fail"`
	Unknown     int  `json:"unknown"`
	JudgeSplits int  `json:"judgeSplits"`
	Flaky       bool `json:"flaky"`
	// NotRun counts, for a multi-turn example's turn, the trials that
	// never sent it (an earlier turn did not pass); never set on an
	// example.
	NotRun int `json:"notRun,omitempty"`
}

// mixed says whether the trials ended more than one way (pass, fail,
// unknown): what flaky means.
func (c TrialCounts) mixed() bool {
	kinds := 0
	for _, k := range []int{c.Pass, c.Fail, c.Unknown} {
		if k > 0 {
			kinds++
		}
	}
	return kinds > 1
}

// RefusalReport is the JSON form of a refusal.
type RefusalReport struct {
	Message     string                 `json:"message"`
	Next        string                 `json:"next,omitempty"`
	Diagnostics []agentfile.Diagnostic `json:"diagnostics,omitempty"`
}
