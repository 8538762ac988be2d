package lsp

import (
	"encoding/json"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/compare"
	"github.com/kmxdev/kmx/sidecar/internal/failures"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// This file is the kmx side of the editor contract: every command ID, custom
// method, their params and results, and the protocol version. It is written
// once, here; shared/protocol/kmx-protocol.ts is generated from it by
// sidecar/cmd/kmx-protocolgen (make protocol), and a test fails when that
// file is stale. contract_manifest.go holds the rest: palette titles and
// settings, which package.json and docs/protocol.md are generated from.
// Change a type here, run the generator, and the extension's compiler shows
// what else must change.

// ProtocolVersion versions the contract below. The server returns it in the
// initialize result (serverInfo and experimental.kmxProtocolVersion); the
// extension refuses a server whose version it does not know. Bump it on any
// change that an older extension would misread.
const ProtocolVersion = "kmx.lsp/v1"

// Command IDs of the extension's commands that reach the server: the
// lenses' commands and their palette entries. The extension registers each
// and sends the custom method CommandSpecs names for it; the server serves
// the methods only (it has no workspace/executeCommand: a second way into
// every feature that nothing used).
const (
	CommandRunExample    = "kmx.runExample"
	CommandRunWithInput  = "kmx.runWithInput"
	CommandTestFile      = "kmx.testFile"
	CommandExplain       = "kmx.explainLastFailure"
	CommandListRuns      = "kmx.listRuns"
	CommandClearJournals = "kmx.clearJournals"
	CommandInspectRun    = "kmx.inspectRun"
	CommandOpenChat      = "kmx.openChat"
	// CommandRegradeLastRun is the "Re-grade last run" lens: kmx/test with
	// fromRun set to the file's newest finished test run (docs/regrade.md).
	CommandRegradeLastRun = "kmx.regradeLastRun"
	// CommandCompareRuns is the replay panel's "Compare with previous run
	// of this file" (and the palette's, for the active file).
	CommandCompareRuns = "kmx.compareRuns"
	// CommandCompareModels is "Compare Models…" (the palette, and the Test
	// Explorer's "Compare models…" profile): kmx/compare with the models
	// the user picks, the grid shown in the comparison panel.
	CommandCompareModels = "kmx.compareModels"
)

// CommandAddExamples is the "Add examples" lens's command. Unlike the
// commands above it never reaches the server: its argument (AddExamplesParams)
// carries the edits, and the extension applies the one the user picks.
const CommandAddExamples = "kmx.addExamples"

// AddExamplesParams is the argument of CommandAddExamples: the agent file
// and the homes its examples may go to, the recommended one first.
type AddExamplesParams struct {
	URI   string         `json:"uri"`
	Homes []ExamplesHome `json:"homes"`
}

// ExamplesHome is one place "Add examples" can write a skeleton to.
type ExamplesHome struct {
	// Title says where, for a quick pick.
	Title string `json:"title"`
	// Detail says what the model receives with that home.
	Detail string `json:"detail,omitempty"`
	// Edit is an LSP WorkspaceEdit.
	Edit any `json:"edit"`
	// Open is a file the edit creates, to show once it is applied.
	Open string `json:"open,omitempty"`
}

// Custom request methods (client → server unless noted).
const (
	MethodRun           = "kmx/run"
	MethodTest          = "kmx/test"
	MethodExamples      = "kmx/examples"
	MethodExplain       = "kmx/explain"
	MethodListRuns      = "kmx/listRuns"
	MethodClearJournals = "kmx/clearJournals"
	MethodInspect       = "kmx/inspect"
	MethodChat          = "kmx/chat"
	MethodChatDiscard   = "kmx/chatDiscard"
	MethodDiffRuns      = "kmx/diffRuns"
	MethodCompareModels = "kmx/compareModels"
)

// Server → client requests: the editor route (route.Editor). The server
// sends them only to a client that set InitializationOptions.LanguageModels.
const (
	// MethodLanguageModels lists the chat models VS Code offers
	// (vscode.lm.selectChatModels()), once per invocation, before its
	// journal exists: the preflight.
	MethodLanguageModels = "kmx/languageModel/models"
	// MethodLanguageModelSend sends one request to one model the preflight
	// resolved (LanguageModelChat.sendRequest) and answers the final text
	// parts and tool-call parts. $/cancelRequest cancels it.
	MethodLanguageModelSend = "kmx/languageModel/send"
	// MethodLanguageModelTools lists the tools VS Code offers
	// (vscode.lm.tools), once per invocation of a tool-declaring agent on
	// the editor route, before its journal exists: the tool binding.
	MethodLanguageModelTools = "kmx/languageModel/tools"
	// MethodLanguageModelInvokeTool calls one bound tool
	// (vscode.lm.invokeTool), after the client has checked that VS Code
	// still offers exactly the bound tool under its name. VS Code keeps its
	// own confirmation. $/cancelRequest cancels it.
	MethodLanguageModelInvokeTool = "kmx/languageModel/invokeTool"
)

// LanguageModelErrorCode is the JSON-RPC error code the client answers
// kmx/languageModel/send and kmx/languageModel/invokeTool with when it
// refuses or the provider or tool fails; the error's data is
// route.EditorErrorData, the class only.
const LanguageModelErrorCode = -32803

// ExampleParams names one example of an open (or on-disk) agent file.
type ExampleParams struct {
	// URI is the agent file's document URI (file://…/x.agent.md).
	URI string `json:"uri"`
	// ExampleID selects one example; empty runs Input instead.
	ExampleID string `json:"exampleId,omitempty"`
	// Input is ad-hoc input for Run (at most 16 KiB, checked for credential
	// shapes); it replaces the example selection.
	Input *string `json:"input,omitempty"`
	// Model overrides the model for this request only (the editor's model
	// picker); empty uses the settings, then the file's model.
	Model string `json:"model,omitempty"`
	// WorkDoneToken is LSP's work-done progress token: the run's progress
	// is reported on it when the client sent one.
	WorkDoneToken json.RawMessage `json:"workDoneToken,omitempty"`
}

// TestParams selects examples of a file to test.
type TestParams struct {
	URI string `json:"uri"`
	// Examples selects example IDs; empty tests every example of the file.
	Examples []string `json:"examples,omitempty"`
	Model    string   `json:"model,omitempty"`
	// Trials runs each example this many times (1 to 20), each in a fresh
	// Session; the report's examples then carry trial counts and flaky
	// marks. Omitted: 1.
	Trials int `json:"trials,omitempty"`
	// FromRun re-grades the answers journaled by this run with zero agent
	// model calls (docs/regrade.md).
	FromRun string `json:"fromRun,omitempty"`
	// WorkDoneToken is LSP's work-done progress token (see ExampleParams).
	WorkDoneToken json.RawMessage `json:"workDoneToken,omitempty"`
}

// CompareModelsParams tests one file on several models (kmx test --model A
// --model B) and, with Baseline, against the agent's instructions at a git
// revision (--baseline REV, or "none"): each column its own run and
// journal, all on one pool of the kmx.concurrency slots.
type CompareModelsParams struct {
	URI string `json:"uri"`
	// Models are the models to compare, in column order (2 to 8, each
	// once); with Baseline one model is enough, and none means the file's
	// (or the settings') model.
	Models []string `json:"models,omitempty"`
	// Examples selects example IDs; empty compares every example.
	Examples []string `json:"examples,omitempty"`
	// Baseline is a git revision of the file's repository, or "none".
	Baseline string `json:"baseline,omitempty"`
	// Trials runs each example this many times per column (1 to 20).
	Trials int `json:"trials,omitempty"`
	// WorkDoneToken is LSP's work-done progress token (see ExampleParams).
	WorkDoneToken json.RawMessage `json:"workDoneToken,omitempty"`
}

// CompareModelsResult is the comparison's grid (kmx.test.compare/v1, computed by
// the sidecar: verdicts, changes against a baseline, the rows where the
// models disagree), or, when nothing ran, the refusal. Each column's
// report is in Reports, in column order, for the Test Explorer.
type CompareModelsResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	URI             string `json:"uri"`
	DocumentVersion int32  `json:"documentVersion"`
	// Comparison is absent when Refusal is set.
	Comparison *compare.Result `json:"comparison,omitempty"`
	// Reports are the columns' reports (a refused column's too).
	Reports []*runner.Report `json:"reports,omitempty"`
	// Refusal says why nothing ran (a model named twice, a revision git
	// does not know, a file that is not valid) and what to change.
	Refusal *compare.Refusal `json:"refusal,omitempty"`
}

// ReportResult is the answer to a run or a test: the versioned local
// preview report (per-example verdicts with the example's range and the
// deciding assertion's range) and the document version it was made from, so
// the extension can tell when its ranges no longer match the buffer. A
// refusal is a report with verdict "refused" and a refusal object, not a
// JSON-RPC error: the editor shows it like any other result.
type ReportResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	URI             string `json:"uri"`
	// DocumentVersion is the open document's version the run used; 0 when
	// the file was read from disk because it was not open.
	DocumentVersion int32          `json:"documentVersion"`
	Report          *runner.Report `json:"report"`
	// CaptureEdit is the LSP WorkspaceEdit that fills the pending
	// recordings a live call answered (report.capture, status edit). The
	// extension applies it as one undoable edit; the sidecar never writes
	// the file in the editor.
	CaptureEdit any `json:"captureEdit,omitempty"`
	// FileEvidence is, for each failed file assertion of an example run
	// on a fixture workspace, what it expected and what the turn left, for
	// the Test Explorer's expected/actual diff. The report carries paths
	// and counts only; this is the editor's alone, each side bounded
	// (workspace.MaxEvidenceBytes) and never credential-shaped.
	FileEvidence []FileEvidence `json:"fileEvidence,omitempty"`
}

// FileEvidence is one failed file assertion's two sides
// (workspace.Evidence): fileContains' text against the file's final
// content, fileNotContains' content without the text against the content,
// fileMatches' pattern against the content, fileUnchanged's fixture bytes
// against the final ones, filesChanged's expected paths against the
// changed ones (one a line).
type FileEvidence struct {
	// Example is the example's ID; Assertion the assertion's index in its
	// assert list (the report's assertions[].index).
	Example   string `json:"example"`
	Assertion int    `json:"assertion"`
	Expected  string `json:"expected"`
	Actual    string `json:"actual"`
}

// DocumentParams names one agent file.
type DocumentParams struct {
	URI string `json:"uri"`
}

// ExamplesResult is the parsed view of a document for the Test Explorer: a
// pure function of the text plus kmx.yaml beside the file.
type ExamplesResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	URI             string `json:"uri"`
	DocumentVersion int32  `json:"documentVersion"`
	// State is "valid", "unfinished" or "invalid"; only a valid file runs.
	State   string `json:"state"`
	AgentID string `json:"agentId,omitempty"`
	// AgentName is the display name: the header's `name`, else the ID.
	AgentName string `json:"agentName,omitempty"`
	Revision  string `json:"revision,omitempty"`
	// ExamplesURI is the sibling examples file when the examples live
	// there: their ranges are positions in it. Absent for the single-file
	// form, whose ranges are in URI.
	ExamplesURI string `json:"examplesUri,omitempty"`
	// ExamplesHeading is the "## Examples" line, absent without one.
	ExamplesHeading *agentfile.Range `json:"examplesHeading,omitempty"`
	Examples        []ExampleInfo    `json:"examples"`
	Tools           ToolSettings     `json:"tools"`
}

// ExampleInfo is one example: where it is and what it asserts (never its
// input, which the editor already has in the buffer).
type ExampleInfo struct {
	ID string `json:"id"`
	// Range is the "- id:" line; FullRange the whole list item.
	Range      agentfile.Range    `json:"range"`
	FullRange  agentfile.Range    `json:"fullRange"`
	Assertions []AssertionSummary `json:"assertions"`
	// Turns are a multi-turn example's turns (`turns:`), in order: the
	// Test Explorer shows one child per turn under the example. Absent for
	// a one-turn example.
	Turns []TurnInfo `json:"turns,omitempty"`
}

// TurnInfo is one turn of a multi-turn example.
type TurnInfo struct {
	// Turn counts from 1, as the report's turns do.
	Turn int `json:"turn"`
	// Label is "turn N: " and the first words of the turn's input (at most
	// TurnLabelRunes runes of it, on one line): the author's own text from
	// the buffer, where the parser already refuses credential shapes.
	Label string `json:"label"`
	// Range is the turn's "- input:" line.
	Range      agentfile.Range    `json:"range"`
	Assertions []AssertionSummary `json:"assertions"`
}

// TurnLabelRunes bounds how much of a turn's input its label quotes.
const TurnLabelRunes = 40

// AssertionSummary describes one assertion in one line.
type AssertionSummary struct {
	Index int    `json:"index"`
	Type  string `json:"type"`
	// Summary is a short human description, e.g. `contains "Release notes:"`.
	Summary string          `json:"summary"`
	Range   agentfile.Range `json:"range"`
}

// ToolSettings is each declared tool's state from kmx.yaml beside the agent
// file (missing file or name = Enabled). Error is set when kmx.yaml cannot
// be used; then States is empty and a run is refused until it is fixed.
type ToolSettings struct {
	Error  string      `json:"error,omitempty"`
	States []ToolState `json:"states"`
	// Revision digests the states as a run would freeze them now: a
	// report whose agent.settingsRevision differs is out of date. Empty
	// when no tool is declared or kmx.yaml cannot be used.
	Revision string `json:"revision,omitempty"`
}

// ToolState is one declared tool and its state, "Enabled" or "Disabled".
type ToolState struct {
	Name  string          `json:"name"`
	State string          `json:"state"`
	Range agentfile.Range `json:"range"`
}

// ExplainParams asks why the last test of a file failed.
type ExplainParams struct {
	URI string `json:"uri"`
	// ShowContent includes recorded answers; off by default.
	ShowContent bool `json:"showContent,omitempty"`
}

// ExplainResult carries the offline explanation of retained failures.
type ExplainResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	URI             string `json:"uri"`
	Label           string `json:"label"`
	// Explanation is the failures package's versioned JSON
	// (kmx.explain/v1): records newest first, each current or historical.
	Explanation failures.Explanation `json:"explanation"`
}

// ListRunsResult lists the retained run journals of one agent file, oldest
// first. Journals record the agent ID and revision, not the file's path, so
// a file's runs are the runs of its agent ID; CurrentRevision lets the
// extension tell runs of the text it holds from runs of earlier edits.
type ListRunsResult struct {
	ProtocolVersion string            `json:"protocolVersion"`
	URI             string            `json:"uri"`
	AgentID         string            `json:"agentId"`
	CurrentRevision string            `json:"currentRevision,omitempty"`
	Runs            []journal.RunInfo `json:"runs"`
}

// InspectParams names one retained run to replay offline.
type InspectParams struct {
	// RunID is the journal file's name without ".db" (see kmx/listRuns).
	RunID string `json:"runId"`
	// ShowReasoning includes judge reasoning; withheld by default.
	ShowReasoning bool `json:"showReasoning,omitempty"`
}

// InspectResult is the replay of one run with zero model calls: the
// readback Inspection (kmx.journal.inspect/v2), labeled "local preview
// journal replay; not a test result". It has no verdicts.
type InspectResult struct {
	ProtocolVersion string               `json:"protocolVersion"`
	Inspection      *readback.Inspection `json:"inspection"`
}

// DiffRunsParams names the two runs to compare: with RunID, that run (B)
// and the newest earlier run of the same agent (A); with only URI, the two
// newest runs of that file's agent. Runs still executing are skipped.
//
// With Comparison and RunID, the run is a column of a comparison (kmx test
// --model A --model B, or --baseline): the answer is that comparison read
// back (readback.DiffComparison, kmx journal diff RUN of such a run) in
// Comparison, the replay panel's compare view.
type DiffRunsParams struct {
	URI        string `json:"uri,omitempty"`
	RunID      string `json:"runId,omitempty"`
	Comparison bool   `json:"comparison,omitempty"`
}

// DiffRunsResult is kmx journal diff A B of the two runs, offline with zero
// model calls (readback.RunDiff, kmx.journal.diff/v2), labeled "local
// preview journal comparison; not a test result".
//
// Asked for a comparison, Diff is absent and Comparison holds every
// retained column of it, laid out as a grid (kmx.journal.comparison/v1).
type DiffRunsResult struct {
	ProtocolVersion string                   `json:"protocolVersion"`
	Diff            *readback.RunDiff        `json:"diff"`
	Comparison      *readback.ComparisonDiff `json:"comparison,omitempty"`
}

// ClearJournalsParams clears one run, or with RunID empty every run that is
// not executing (of every file: journals are kmx's, not a file's).
type ClearJournalsParams struct {
	RunID string `json:"runId,omitempty"`
}

// ClearJournalsResult says what was removed and what was kept because it is
// still executing (never deleted, by Clear or by retention).
type ClearJournalsResult struct {
	ProtocolVersion string   `json:"protocolVersion"`
	Removed         []string `json:"removed"`
	Kept            []string `json:"kept"`
	// Message says, in one line, what happened and what to do about kept
	// runs.
	Message string `json:"message"`
}

// Settings are the editor's kmx settings. They carry the NAME of an
// environment variable that holds a credential, never a credential value:
// a settings object with a credential-shaped value is refused whole and
// ignored (the user is told with window/showMessage).
type Settings struct {
	// Model overrides the file's model (the editor's model picker).
	Model string `json:"model,omitempty"`
	// Endpoint is an OpenAI-compatible base URL.
	Endpoint string `json:"endpoint,omitempty"`
	// KeyEnv names the environment variable holding the endpoint's bearer
	// credential.
	KeyEnv        string `json:"keyEnv,omitempty"`
	JudgeEndpoint string `json:"judgeEndpoint,omitempty"`
	JudgeKeyEnv   string `json:"judgeKeyEnv,omitempty"`
	// Concurrency is how many examples a run or test sends at once, 1 to
	// 32; 0 or absent means the default, 4.
	Concurrency int `json:"concurrency,omitempty"`
}

// InitializationOptions is the typed initializationOptions of initialize.
type InitializationOptions struct {
	// ProtocolVersion is the contract version the extension speaks; when
	// set and different from ours, initialize is refused.
	ProtocolVersion string   `json:"protocolVersion,omitempty"`
	Settings        Settings `json:"settings"`
	// LanguageModels says the client serves kmx/languageModel/models and
	// kmx/languageModel/send (VS Code's Language Model API): a non-fake
	// model with no endpoint then runs on the editor route. Without it
	// such a model is refused, as on the CLI.
	LanguageModels bool `json:"languageModels,omitempty"`
}

// ConfigurationSettings is the settings field of
// workspace/didChangeConfiguration: the "kmx" section, as
// vscode-languageclient sends it with synchronize.configurationSection.
type ConfigurationSettings struct {
	Kmx *Settings `json:"kmx"`
}

// ProgressValue is one $/progress value (WorkDoneProgressBegin, Report or
// End). On end, Outcome says how the work ended.
type ProgressValue struct {
	Kind        string `json:"kind"`
	Title       string `json:"title,omitempty"`
	Cancellable bool   `json:"cancellable,omitempty"`
	Message     string `json:"message,omitempty"`
	Percentage  *int   `json:"percentage,omitempty"`
	// Outcome is "completed", "failed" or "cancelled" on the end value.
	Outcome string `json:"outcome,omitempty"`
}

// Progress outcomes.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
)

// MethodSpec describes one custom method for the generator, the server's
// dispatch table and the docs.
type MethodSpec struct {
	Method string
	// Name is the method's constant without its Method prefix (MethodRun:
	// "Run"), in Go and in the generated TypeScript.
	Name string
	// Handler is the Server method serving it: func(context.Context, P)
	// (*R, error) with P and R the types of Params and Result. The dispatch
	// table (methods_gen.go, make protocol) is generated from this list, so
	// a handler whose signature drifts from the contract does not compile.
	// Empty for a server → client method.
	Handler string
	// OptionalParams accepts absent or null params as the zero Params.
	OptionalParams bool
	Params         any
	Result         any
	Doc            string
}

// Methods lists the custom methods with their params and results, in the
// order the docs present them.
func Methods() []MethodSpec {
	return []MethodSpec{
		{Method: MethodExamples, Name: "Examples", Handler: "examples", Params: DocumentParams{}, Result: ExamplesResult{}, Doc: "the parsed examples of a document, for the Test Explorer"},
		{Method: MethodRun, Name: "Run", Handler: "run", Params: ExampleParams{}, Result: ReportResult{}, Doc: "run one example, or ad-hoc input (kmx.runWithInput), showing the answer"},
		{Method: MethodTest, Name: "Test", Handler: "test", Params: TestParams{}, Result: ReportResult{}, Doc: "test the file: all examples or the selected ones"},
		{Method: MethodExplain, Name: "Explain", Handler: "explain", Params: ExplainParams{}, Result: ExplainResult{}, Doc: "why the last test of this file failed, read offline from retained failures"},
		{Method: MethodListRuns, Name: "ListRuns", Handler: "listRuns", Params: DocumentParams{}, Result: ListRunsResult{}, Doc: "the retained run journals of this file's agent, oldest first"},
		{Method: MethodClearJournals, Name: "ClearJournals", Handler: "clearJournals", OptionalParams: true, Params: ClearJournalsParams{}, Result: ClearJournalsResult{}, Doc: "delete one run or every run that is not executing"},
		{Method: MethodInspect, Name: "Inspect", Handler: "inspect", Params: InspectParams{}, Result: InspectResult{}, Doc: "replay one retained run offline, with zero model calls"},
		{Method: MethodCompareModels, Name: "CompareModels", Handler: "compareModels", Params: CompareModelsParams{}, Result: CompareModelsResult{}, Doc: "test the file on several models, or against a baseline revision, and answer the grid (kmx test --model A --model B --baseline REV)"},
		{Method: MethodDiffRuns, Name: "DiffRuns", Handler: "diffRuns", Params: DiffRunsParams{}, Result: DiffRunsResult{}, Doc: "compare a run with the previous run of its file (kmx journal diff), offline, with zero model calls"},
		{Method: MethodChat, Name: "Chat", Handler: "chat", Params: ChatParams{}, Result: ChatResult{}, Doc: "the file's conversation: its history (no input, zero model calls) or one new turn"},
		{Method: MethodChatDiscard, Name: "ChatDiscard", Handler: "chatDiscard", Params: ChatParams{}, Result: ChatResult{}, Doc: "record the discard of a conversation's turn that has no recorded outcome"},
	}
}

// ClientMethods lists the server → client requests with their params and
// results.
func ClientMethods() []MethodSpec {
	return []MethodSpec{
		{Method: MethodLanguageModels, Name: "LanguageModels", Params: route.EditorModelsParams{}, Result: route.EditorModelsResult{}, Doc: "server → client: the chat models VS Code offers now (the preflight lists them once per run)"},
		{Method: MethodLanguageModelSend, Name: "LanguageModelSend", Params: route.EditorSendParams{}, Result: route.EditorSendResult{}, Doc: "server → client: one request to a preflight-resolved model; errors carry data {class}"},
		{Method: MethodLanguageModelTools, Name: "LanguageModelTools", Params: route.EditorToolsParams{}, Result: route.EditorToolsResult{}, Doc: "server → client: the tools VS Code offers now (listed once per run of a tool-declaring agent, to bind its declared names)"},
		{Method: MethodLanguageModelInvokeTool, Name: "LanguageModelInvokeTool", Params: route.EditorInvokeToolParams{}, Result: route.EditorInvokeToolResult{}, Doc: "server → client: one call of a bound tool through vscode.lm.invokeTool; errors carry data {class}"},
	}
}

// CommandSpec is one command of the extension that reaches the server.
type CommandSpec struct {
	ID string
	// Name is its constant in the generated TypeScript (Commands.Name).
	Name string
	// Method is the custom method the extension sends for it.
	Method string
	// Doc says what its one argument and its answer are.
	Doc string
}

// CommandSpecs lists every such command, in the order the generated
// TypeScript and docs/protocol.md present them.
func CommandSpecs() []CommandSpec {
	return []CommandSpec{
		{CommandRunExample, "RunExample", MethodRun, "ExampleParams with exampleId → ReportResult"},
		{CommandRunWithInput, "RunWithInput", MethodRun, "ExampleParams with input → ReportResult"},
		{CommandTestFile, "TestFile", MethodTest, "TestParams → ReportResult"},
		{CommandExplain, "Explain", MethodExplain, "ExplainParams → ExplainResult"},
		{CommandListRuns, "ListRuns", MethodListRuns, "DocumentParams → ListRunsResult"},
		{CommandClearJournals, "ClearJournals", MethodClearJournals, "ClearJournalsParams → ClearJournalsResult"},
		{CommandInspectRun, "InspectRun", MethodInspect, "InspectParams → InspectResult"},
		{CommandOpenChat, "OpenChat", MethodChat, "ChatParams (uri) → ChatResult; the extension opens the chat panel"},
		// kmx.regradeLastRun is kmx.testFile with fromRun: the lens names
		// the run.
		{CommandRegradeLastRun, "RegradeLastRun", MethodTest, "TestParams with fromRun → ReportResult: the Re-grade last run lens, zero agent model calls"},
		{CommandCompareModels, "CompareModels", MethodCompareModels, "CompareModelsParams → CompareModelsResult; the extension asks for the models and renders the grid in the comparison panel"},
		{CommandCompareRuns, "CompareRuns", MethodDiffRuns, "DiffRunsParams → DiffRunsResult; the extension renders it in the replay panel"},
	}
}

// Commands maps every command ID of CommandSpecs to its method.
func Commands() map[string]string {
	out := map[string]string{}
	for _, c := range CommandSpecs() {
		out[c.ID] = c.Method
	}
	return out
}
