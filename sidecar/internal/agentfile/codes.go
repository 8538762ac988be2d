package agentfile

// Diagnostic codes. They are stable across releases: editors, CI scripts and
// docs/diagnostics.md refer to them. KMX1xxx are structure and frontmatter,
// KMX2xxx examples, KMX3xxx assertions, KMX4xxx tools, KMX9xxx credentials.
const (
	CodeYAMLSyntax         = "KMX1001"
	CodeFrontmatterNotMap  = "KMX1002"
	CodeModelNotString     = "KMX1003"
	CodeUnknownFrontmatter = "KMX1004"
	CodeBadName            = "KMX1005"
	CodeDescriptionNotStr  = "KMX1006"
	CodeBadFileName        = "KMX1007"
	CodePreviewNote        = "KMX1008"
	CodeNotUTF8            = "KMX1009"
	CodeRepeatedKey        = "KMX1010"
	CodeUnfinished         = "KMX1100"

	CodeNoExamples          = "KMX2001"
	CodeExamplesNotYAML     = "KMX2002"
	CodeExtraBlock          = "KMX2003"
	CodeExamplesNotList     = "KMX2004"
	CodeExampleNotMapping   = "KMX2005"
	CodeMissingID           = "KMX2006"
	CodeBadID               = "KMX2007"
	CodeDuplicateID         = "KMX2008"
	CodeMissingInput        = "KMX2009"
	CodeInputTooLarge       = "KMX2010"
	CodeUnknownExampleKey   = "KMX2011"
	CodeExamplesInBothHomes = "KMX2012"
	CodeTurnsWithInput      = "KMX2013"
	CodeMalformedTurns      = "KMX2014"
	CodeBadWorkspace        = "KMX2020"

	CodeMalformedAssertion = "KMX3001"
	CodeUnknownAssertion   = "KMX3002"
	CodeBadRegex           = "KMX3003"
	CodeNoRubric           = "KMX3004"
	CodeBadThreshold       = "KMX3005"
	CodeAssertUndeclared   = "KMX3006"
	CodeFileNoWorkspace    = "KMX3007"
	CodeNoToolsDeclared    = "KMX3008"
	CodeNothingListed      = "KMX3009"
	CodeBadBudget          = "KMX3010"

	CodeToolsNotList       = "KMX4001"
	CodeBadToolName        = "KMX4002"
	CodeDuplicateTool      = "KMX4003"
	CodeTooManyTools       = "KMX4004"
	CodeRecordingUndecl    = "KMX4005"
	CodeMalformedRecording = "KMX4006"
	CodeUnknownTool        = "KMX4007"

	CodeCredential = "KMX9001"
)

// CodeInfo describes one diagnostic code: what it means and how to fix it.
// docs/diagnostics.md and the tests are checked against this one list.
type CodeInfo struct {
	Code     string
	Severity Severity
	Title    string
	Fix      string
}

// Codes returns the catalogue of every diagnostic code Parse can report, in
// code order. It returns a new slice on each call, so callers may keep or
// modify it.
func Codes() []CodeInfo {
	return []CodeInfo{
		{CodeYAMLSyntax, SeverityError, "YAML does not parse", "Fix the YAML syntax on the reported line (indentation, quotes, a missing ':')."},
		{CodeFrontmatterNotMap, SeverityError, "Frontmatter is not a mapping", "Write the frontmatter as `key: value` lines between the two `---` lines."},
		{CodeModelNotString, SeverityError, "model is not a name or a list of names", "Set `model:` to a model name such as `fake`, or a list of names tried in order, or remove the key."},
		{CodeUnknownFrontmatter, SeverityWarning, "Unknown header key", "Neither VS Code nor kmx reads the key; remove it or check its spelling against the header table in docs/agent-file.md."},
		{CodeBadName, SeverityError, "name is not one line of text", "Write the display name as one line, such as `name: Release notes`, or remove the key."},
		{CodeDescriptionNotStr, SeverityError, "description is not a string", "Write the description as one string."},
		{CodeBadFileName, SeverityError, "File name cannot make the agent ID", "Rename the file so the part before .agent.md is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit."},
		{CodePreviewNote, SeverityInformation, "Header key a local preview does not act on", "Nothing to change: the preview runs the agent alone (no MCP servers started, no handoffs followed, no hooks run)."},
		{CodeNotUTF8, SeverityError, "File is not UTF-8 text", "Save the file as UTF-8 text; an agent file is Markdown, and a binary or other-encoding file cannot be sent to a model."},
		{CodeRepeatedKey, SeverityError, "Key repeated in a mapping", "Keep one of the repeated keys; YAML would silently drop the other."},
		{CodeUnfinished, SeverityInformation, "Still being written", "Finish the construct the file ends in (close the frontmatter, the Examples block or the example)."},
		{CodeNoExamples, SeverityInformation, "No Examples section: nothing to test", "Add a `## Examples` heading with a ```yaml block listing examples."},
		{CodeExamplesNotYAML, SeverityError, "Examples block is not fenced as yaml", "Open the block under `## Examples` with ```yaml (or ```yml)."},
		{CodeExtraBlock, SeverityError, "More than one block under Examples", "Keep exactly one fenced block under `## Examples`; merge the lists into it."},
		{CodeExamplesNotList, SeverityError, "Examples is not a list", "Write the block as a YAML list: each example starts with `- id:`."},
		{CodeExampleNotMapping, SeverityError, "Example is not a mapping", "Write each list item as a mapping with `id:` and `input:`."},
		{CodeMissingID, SeverityError, "Example without id", "Add `id:` with a unique name to the example."},
		{CodeBadID, SeverityError, "Example id has bad characters", "Use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit."},
		{CodeDuplicateID, SeverityError, "Duplicate example id", "Rename one of the examples; ids are unique in a file."},
		{CodeMissingInput, SeverityError, "Example without input", "Add `input:` with the non-empty user message to send."},
		{CodeInputTooLarge, SeverityError, "Input over 16 KiB", "Shorten the input to at most 16 KiB (16384 bytes)."},
		{CodeUnknownExampleKey, SeverityError, "Unknown example key", "Use only id, input (or turns), assert, tools and workspace in an example; check the spelling."},
		{CodeExamplesInBothHomes, SeverityError, "Examples in both homes", "Keep the examples in one home: move the agent file's Examples section into NAME.agent.examples.yaml, or delete that file."},
		{CodeTurnsWithInput, SeverityError, "input or assert beside turns", "A multi-turn example has `turns:` only: move `input` into the first turn and each assertion under the turn whose answer it checks."},
		{CodeMalformedTurns, SeverityError, "Malformed turns", "Write `turns:` as a list of 1-20 turns, each `- input: MESSAGE` with an optional `assert:` list."},
		{CodeBadWorkspace, SeverityError, "Bad workspace", "Name a folder beside the agent file, relative and clean (such as fixtures/app: no `..`, no absolute path); a file-wide default is a first list item holding only `workspace: DIR`."},
		{CodeMalformedAssertion, SeverityError, "Malformed assertion", "Write each assertion as one `type: operand` entry, such as `- contains: TEXT`."},
		{CodeUnknownAssertion, SeverityError, "Unknown assertion type", "Use contains, notContains, regex, llmJudge, toolCalled, toolNotCalled, toolCalledWith, toolOrder, toolCalls, noOtherTools, maxLatencyMs, maxTokens, fileContains, fileNotContains, fileMatches, fileUnchanged or filesChanged."},
		{CodeBadRegex, SeverityError, "Invalid regex", "Fix the pattern so that Go's RE2 syntax accepts it (no backreferences or lookaround)."},
		{CodeNoRubric, SeverityError, "llmJudge without rubric", "Add a non-empty `rubric:` saying what the judge should look for."},
		{CodeBadThreshold, SeverityError, "threshold is not an integer from 0 to 100", "Set `threshold:` to a whole number from 0 to 100, or remove it for the default."},
		{CodeAssertUndeclared, SeverityError, "Tool assertion names an undeclared tool", "Declare the tool in the frontmatter `tools:` list, or fix the name."},
		{CodeFileNoWorkspace, SeverityError, "File assertion without a workspace", "Give the example `workspace: DIR` (or the file a first item `- workspace: DIR`), or remove the file assertion."},
		{CodeNoToolsDeclared, SeverityError, "Trajectory assertion in a file that declares no tools", "Declare the agent's tools in the frontmatter `tools:` list, or remove the assertion: with no tools the turn can call none."},
		{CodeNothingListed, SeverityError, "noOtherTools with no tool listed", "Name the allowed tools in the same assert list (toolCalled, toolCalledWith or toolOrder), or use `toolCalls: {max: 0}` for a turn that calls no tool."},
		{CodeBadBudget, SeverityError, "Budget is not a positive whole number", "Set `maxLatencyMs:` (milliseconds) or `maxTokens:` to a whole number from 1 to 100000000."},
		{CodeToolsNotList, SeverityError, "tools is not a list of references", "Write `tools: [name, 'set/tool', 'server/*']` or one `- reference` per line."},
		{CodeBadToolName, SeverityError, "Bad tool reference", "Write the reference on one line, without surrounding spaces, at most 256 bytes."},
		{CodeDuplicateTool, SeverityWarning, "Tool listed twice", "Remove the repeated entry; it counts once."},
		{CodeTooManyTools, SeverityError, "More than 32 tools", "List at most 32 unique tool references."},
		{CodeRecordingUndecl, SeverityError, "Recording names an undeclared tool", "Declare the tool in the frontmatter `tools:` list, or fix the name."},
		{CodeMalformedRecording, SeverityError, "Malformed tool recording", "Write `NAME: {recorded: {calls: [{arguments: ..., result: ...}]}}`; `calls: []` means pending."},
		{CodeUnknownTool, SeverityWarning, "Tool unknown to VS Code's built-in tools", "Check the spelling against VS Code's tool references (docs/tools.md); keep the name if an extension or MCP server provides it: kmx still offers it, answered by a recording or \"not available in this test\"."},
		{CodeCredential, SeverityError, "Credential-shaped content", "Remove the credential from the file and rotate it; refer to secrets by environment variable name only."},
	}
}
