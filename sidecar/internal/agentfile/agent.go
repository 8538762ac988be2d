// Package agentfile reads single-file Markdown agents (*.agent.md) into a
// typed Agent and reports every problem as a Diagnostic that says where, what
// and what to change.
//
// It owns the one grammar of the agent file language, including the line
// between text that is merely unfinished (still being typed) and text that is
// invalid. Parsing is a pure function of the bytes: it never touches the
// filesystem, a clock, a model or a journal, so the editor can call it on
// every keystroke and every other front (CLI, MCP, runner) gets the same
// answer for the same text. A Parser, for a document open in an editor,
// remembers the checked examples of the previous version so that a
// keystroke re-checks only the examples it touched; its results are those
// of Parse, byte for byte.
package agentfile

import "strconv"

// Severity orders diagnostics the way LSP does: Error refuses execution,
// Warning and Information do not (but Information for an unfinished
// construct still refuses Run and Test, through State).
type Severity int

// Severities, with the same numeric values as the LSP DiagnosticSeverity.
const (
	SeverityError       Severity = 1
	SeverityWarning     Severity = 2
	SeverityInformation Severity = 3
)

// String returns the lower-case name used by `kmx check`.
func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	case SeverityInformation:
		return "information"
	}
	return "unknown"
}

// Position is a place in the source. Offset is in bytes from the start of the
// file; Line and Character are zero-based, Character counted in UTF-16 code
// units as LSP does by default. `kmx check` prints Line+1 and Character+1.
type Position struct {
	Offset    int `json:"offset"`
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is a half-open span [Start, End) of the source.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Diagnostic is one problem in an agent file. Code is stable across releases
// (see docs/diagnostics.md); Message tells the author what to change and
// never echoes a credential-shaped value.
type Diagnostic struct {
	// File is the base name of the examples file for a diagnostic in it
	// (see ParsePair); empty for the agent file itself.
	File     string   `json:"file,omitempty"`
	Range    Range    `json:"range"`
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
}

// State classifies a whole file.
type State int

const (
	// Valid: no Error and no unfinished construct; Run and Test may proceed.
	Valid State = iota
	// Unfinished: the text ends inside a construct and no complete construct
	// before that point is invalid. Shown as Information, never as an error.
	Unfinished
	// Invalid: at least one Error diagnostic.
	Invalid
)

// String returns "valid", "unfinished" or "invalid".
func (s State) String() string {
	switch s {
	case Valid:
		return "valid"
	case Unfinished:
		return "unfinished"
	case Invalid:
		return "invalid"
	}
	return "unknown"
}

// AssertionType names one kind of assertion.
type AssertionType string

// The assertion types the language knows. Any other name is refused.
const (
	Contains      AssertionType = "contains"
	NotContains   AssertionType = "notContains"
	Regex         AssertionType = "regex"
	LLMJudge      AssertionType = "llmJudge"
	ToolCalled    AssertionType = "toolCalled"
	ToolNotCalled AssertionType = "toolNotCalled"
	// File assertions, judged from the journaled workspace after the turn
	// (an example with a workspace only).
	FileContains    AssertionType = "fileContains"
	FileNotContains AssertionType = "fileNotContains"
	FileMatches     AssertionType = "fileMatches"
	FileUnchanged   AssertionType = "fileUnchanged"
	FilesChanged    AssertionType = "filesChanged"

	// Trajectory assertions, judged from a turn's replay-verified tool
	// trace (docs/agent-file.md#assertions-on-what-the-agent-did).
	ToolCalledWith AssertionType = "toolCalledWith"
	ToolOrder      AssertionType = "toolOrder"
	ToolCalls      AssertionType = "toolCalls"
	NoOtherTools   AssertionType = "noOtherTools"

	// Budgets, judged from a turn's journal.
	MaxLatencyMs AssertionType = "maxLatencyMs"
	MaxTokens    AssertionType = "maxTokens"
)

// IsFileAssertion reports whether t is judged from the workspace.
func (t AssertionType) IsFileAssertion() bool {
	switch t {
	case FileContains, FileNotContains, FileMatches, FileUnchanged, FilesChanged:
		return true
	}
	return false
}

// IsTrajectory reports whether t is judged from the tool trace: the
// assertions a file that declares no tools cannot use.
func (t AssertionType) IsTrajectory() bool {
	switch t {
	case ToolCalled, ToolNotCalled, ToolCalledWith, ToolOrder, ToolCalls, NoOtherTools:
		return true
	}
	return false
}

// IsBudget reports whether t is judged from the journal's measures of a
// turn (its duration, its token usage).
func (t AssertionType) IsBudget() bool {
	return t == MaxLatencyMs || t == MaxTokens
}

// Agent is one parsed agent file. Fields hold decoded values (YAML escapes
// resolved, comments discarded).
type Agent struct {
	// ID is the file name without ".agent.md" (see IDFromFileName): the
	// name journals, retained failures and reports file results under.
	ID string
	// Name is the frontmatter `name`, a display name in VS Code's format
	// ("C# Expert"); empty when the header has none. DisplayName falls back
	// to the ID.
	Name        string
	Description string
	// Model is the preferred model, the first of Models; nil when the
	// frontmatter has no model key (omitted stays omitted, distinct from an
	// empty string).
	Model *string
	// Models lists every model the header names, in order: VS Code uses the
	// first one that resolves. One entry for `model: NAME`.
	Models []string
	// Tools holds the tool references exactly as written (a tool name, a
	// tool set, `set/tool`, `server/*`, an MCP server name with dots), each
	// once, in source order.
	Tools []Tool
	// Instructions is the text between the frontmatter and the Examples
	// heading (the whole body when there is no Examples heading).
	Instructions      string
	InstructionsRange Range
	// ExamplesHeading is the range of the "## Examples" line, nil without one.
	ExamplesHeading *Range
	// ExamplesFile is the base name of the sibling examples file when the
	// examples come from it (ParsePair); the examples' ranges are then
	// positions in that file. Empty for the single-file form.
	ExamplesFile string
	Examples     []Example
	// Workspace is the examples' default fixture folder: a first list item
	// holding only `workspace: DIR`. Empty when there is none.
	Workspace      string
	WorkspaceRange Range
	// Revision is the lower-case hex SHA-256 of the exact source bytes;
	// with a sibling examples file it covers both files (see ParsePair).
	Revision string
}

// DisplayName is the name shown in lenses, the Test Explorer and reports:
// the header's `name`, else the agent ID.
func (a *Agent) DisplayName() string {
	if a.Name != "" {
		return a.Name
	}
	return a.ID
}

// Tool is one declared tool reference, as written in the header.
type Tool struct {
	Name  string
	Range Range
}

// Example is one entry of the Examples list.
type Example struct {
	ID string
	// Input and Assertions are a one-turn example's; a multi-turn example
	// (`turns:`) leaves them empty and holds its script in Turns.
	Input string
	// Range covers the "- id:" line, where the Run example lens goes.
	Range Range
	// FullRange covers the whole list item.
	FullRange  Range
	Assertions []Assertion
	// Turns is a multi-turn example's script, in order; nil for a
	// one-turn example. See Script.
	Turns []Turn
	// Tools holds per-example tool recordings, in source order; they
	// answer the calls of every turn.
	Tools []ToolRecording
	// Workspace is the example's own fixture folder (`workspace: DIR`,
	// relative to the agent's physical file); empty means the file's
	// default (Agent.Workspace), if any. See Agent.WorkspaceOf.
	Workspace      string
	WorkspaceRange Range
	// defaults marks a list item holding only `workspace:`: the file's
	// default, taken out of Examples once the list is read.
	defaults bool
}

// WorkspaceOf is the fixture folder ex runs in: its own, else the file's
// default; empty when it has none.
func (a *Agent) WorkspaceOf(ex Example) string {
	if ex.Workspace != "" {
		return ex.Workspace
	}
	return a.Workspace
}

// MaxTurns bounds the turns of one multi-turn example.
const MaxTurns = 20

// Turn is one step of a multi-turn example: a user message, sent after
// the earlier turns' inputs and answers, and the assertions on the answer
// to it.
type Turn struct {
	Input      string
	Assertions []Assertion
	// Range covers the turn's "- input:" line.
	Range Range
}

// TurnName is the name turn n (from 1) of the multi-turn example id is
// journaled under (its session's exampleId, and its judge samples'): the
// example ID, "/turn:" and n. An example ID holds no "/", so the name is
// unambiguous.
func TurnName(id string, n int) string { return id + "/turn:" + strconv.Itoa(n) }

// MultiTurn reports whether the example was written with `turns:`.
func (ex *Example) MultiTurn() bool { return ex.Turns != nil }

// Script returns the turns the example runs: its Turns, or for a one-turn
// example its input and assertions as the one turn (at the example's
// Range). The slices are the example's own, not copies.
func (ex *Example) Script() []Turn {
	if ex.Turns != nil {
		return ex.Turns
	}
	return []Turn{{Input: ex.Input, Assertions: ex.Assertions, Range: ex.Range}}
}

// AllAssertions returns every assertion of the example: its assert list,
// or for a multi-turn example each turn's, in order. The result is a new
// slice; the assertions are the example's own values.
func (ex *Example) AllAssertions() []Assertion {
	if ex.Turns == nil {
		return ex.Assertions
	}
	var all []Assertion
	for _, t := range ex.Turns {
		all = append(all, t.Assertions...)
	}
	return all
}

// Assertion is one entry of an example's assert list. The text and tool
// assertions most examples hold need only Value; every other operand is in
// Operands, held behind a pointer so that a parsed example's assertions
// stay small (a 2,000-example file keeps its assertions in memory for the
// whole run; docs/benchmarks.md, Runner).
type Assertion struct {
	// Index is the zero-based position in the example's assert list; with
	// the example ID it identifies the assertion ("weekly#2").
	Index int
	Type  AssertionType
	// Value is the operand of contains, notContains and regex, the tool
	// name of toolCalled, toolNotCalled and toolCalledWith, the text of
	// fileContains and fileNotContains, and the pattern of fileMatches.
	Value string
	Range Range
	// ops holds the other operands; nil when the type has none. Read them
	// with Operands, set them with SetOperands.
	ops *Operands
}

// Operands are an assertion's operands beyond Value: those of the file,
// trajectory, budget and judge assertions.
type Operands struct {
	// Path is the workspace file of fileContains, fileNotContains,
	// fileMatches and fileUnchanged; Paths the list of filesChanged (in
	// source order; empty means nothing changed).
	Path  string
	Paths []string
	// Arguments is toolCalledWith's expected arguments as JSON text (an
	// object): a call matches when its arguments contain these (see
	// docs/agent-file.md).
	Arguments string
	// Names is toolOrder's names in order; for noOtherTools, the names the
	// same assert list names in toolCalled, toolCalledWith and toolOrder
	// (each once, in source order): the only tools the turn may call.
	Names []string
	// Min and Max are toolCalls' bounds on the number of calls, nil when
	// not given (at least one is).
	Min, Max *int
	// Limit is the bound of maxLatencyMs (milliseconds) and maxTokens.
	Limit int
	// Rubric, JudgeModel and Threshold belong to llmJudge. Threshold is nil
	// when omitted (the runner's default applies).
	Rubric     string
	JudgeModel string
	Threshold  *int
}

// Operands returns a's operands beyond Value (the zero Operands when it
// has none).
func (a Assertion) Operands() Operands {
	if a.ops == nil {
		return Operands{}
	}
	return *a.ops
}

// With returns a with the operands o beyond Value.
func (a Assertion) With(o Operands) Assertion {
	a.ops = &o
	return a
}

// op is a's operands to fill in while parsing, made on first use.
func (a *Assertion) op() *Operands {
	if a.ops == nil {
		a.ops = &Operands{}
	}
	return a.ops
}

// ToolRecording is the recorded output of one tool for one example.
type ToolRecording struct {
	Tool string
	// Pending is true for `recorded: {calls: []}`: the first live result
	// will be captured.
	Pending bool
	Calls   []RecordedCall
	Range   Range
	// CallsRange covers the `calls` sequence's own text (for a pending
	// recording, its `[]`): where a capture writes the first call.
	CallsRange Range
}

// RecordedCall is one saved tool call: its arguments and result as JSON text.
type RecordedCall struct {
	Arguments string
	Result    string
}

// Result is the outcome of Parse: the agent (as much as could be read), every
// diagnostic in source order, and the file's State.
type Result struct {
	Agent       *Agent
	Diagnostics []Diagnostic
	State       State
	// Unfinished lists the constructs the text ends inside, outermost
	// first; each also has a CodeUnfinished Information diagnostic.
	Unfinished []UnfinishedConstruct
}
