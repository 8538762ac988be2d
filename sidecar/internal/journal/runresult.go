package journal

// KindRunResult is the run-level record a Test writes once, after its
// examples and before Finish: the verdicts it reported, so that a later
// comparison (kmx journal diff) or re-grade can show them without
// re-judging. It lives in the reserved session RunSession, never a Sessions
// session, and is hash-chained like every other record.
const KindRunResult Kind = "run.result"

// RunSession is the reserved session ID of run-level records. Sessions IDs
// are "s<digits>-<hex>", so it never collides with one.
const RunSession = "run"

// RunResult is the payload of KindRunResult.
type RunResult struct {
	// SourceRun is set on a re-grade: the run whose journaled answers were
	// graded.
	SourceRun string `json:"sourceRun,omitempty"`
	// Baseline is set on a comparison's baseline (kmx test --baseline):
	// where the instructions its turns sent came from.
	Baseline *ResultBaseline `json:"baseline,omitempty"`
	// Comparison is set on each run of a comparison (kmx test --model A
	// --model B, or --baseline): the runs sharing its ID are its columns.
	Comparison *ResultComparison `json:"comparison,omitempty"`
	// Trials is how many times each example ran (1 for a plain Test).
	Trials int `json:"trials"`
	// AgentCalls counts the agent model calls this run sent (a re-grade
	// sends none); JudgeCalls the judge samples it sent.
	AgentCalls int `json:"agentCalls"`
	JudgeCalls int `json:"judgeCalls"`
	// Verdict is the file's verdict as reported.
	Verdict  string          `json:"verdict"`
	Examples []ResultExample `json:"examples"`
}

// ResultExample is one example's reported verdict (one per trial).
type ResultExample struct {
	ID         string  `json:"id"`
	Trial      int     `json:"trial,omitempty"`
	Verdict    string  `json:"verdict"`
	Message    string  `json:"message,omitempty"`
	DurationMs float64 `json:"durationMs"`
	// SessionID is the example's agent session in this journal, when the
	// turn was placed.
	SessionID string `json:"sessionId,omitempty"`
	// Judges are the example's llmJudge assertions as they were judged,
	// so a re-grade can tell whether a journaled sample may be reused.
	Judges []ResultJudge `json:"judges,omitempty"`
	// JudgeSessions are the judge samples' sessions that judged this
	// example's (this trial's) answer: a one-turn example's (a multi-turn
	// example's turns name their own). Absent in journals kmx wrote before
	// it recorded them, whose samples a read-back gives to the first
	// agent turn of their example.
	JudgeSessions []string `json:"judgeSessions,omitempty"`
	// Turns are a multi-turn example's turns: each one's verdict and
	// agent session ("not run" turns have none).
	Turns []ResultTurn `json:"turns,omitempty"`
	// Usage is the agent's token usage over the example's verified turns,
	// as the routes reported it; absent when no turn reported any.
	Usage *Usage `json:"usage,omitempty"`
}

// ResultTurn is one turn of a multi-turn example in a run's result.
type ResultTurn struct {
	Turn      int    `json:"turn"`
	Verdict   string `json:"verdict"`
	Message   string `json:"message,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	// JudgeSessions are the judge samples' sessions that judged the turn.
	JudgeSessions []string `json:"judgeSessions,omitempty"`
}

// ResultJudge is one llmJudge assertion: its rubric, the judge's model
// identity and the effective threshold.
type ResultJudge struct {
	Rubric    string        `json:"rubric"`
	Model     ModelIdentity `json:"model"`
	Threshold int           `json:"threshold"`
}

// ResultBaseline is where a baseline run's instructions came from: the
// revision as given ("none": empty instructions), the commit it resolved
// to and the agent file's path in the repository there.
type ResultBaseline struct {
	Rev    string `json:"rev"`
	Commit string `json:"commit,omitempty"`
	Path   string `json:"path,omitempty"`
}

// ResultComparison places a run in its comparison: the comparison's ID
// (the same in every run of it), this run's column (1-based) and how many
// columns it has.
type ResultComparison struct {
	ID      string `json:"id"`
	Column  int    `json:"column"`
	Columns int    `json:"columns"`
}
