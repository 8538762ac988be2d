package lsp

import "github.com/kmxdev/kmx/sidecar/internal/invocation"

// This file is the part of the editor contract that VS Code reads from the
// extension's manifest: the commands a person can run and the settings.
// package.json's contributes.commands and contributes.configuration, and
// the command and settings tables of docs/protocol.md, are generated from
// it (make protocol); make lint fails when they are stale.

// Commands the extension registers and handles alone (never sent to the
// server), beside CommandAddExamples.
const (
	CommandShowRunReplay         = "kmx.showRunReplay"
	CommandSelectModel           = "kmx.selectModel"
	CommandSetEndpointCredential = "kmx.setEndpointCredential"
	CommandShowLogs              = "kmx.showLogs"
	CommandRestartServer         = "kmx.restartServer"
)

// PaletteCategory is the palette category of every kmx command.
const PaletteCategory = "kmx"

// PaletteCommand is one command package.json declares: the palette, lenses
// and menus run it.
type PaletteCommand struct {
	ID string
	// Title is what the palette shows after "kmx: ".
	Title string
	// Doc says what it does, for docs/protocol.md.
	Doc string
}

// PaletteCommands lists the declared commands in palette order. The
// server's commands (Commands) are here too, but for kmx.listRuns and
// kmx.inspectRun: they take arguments only the server's lenses give, so
// they are served, not offered.
func PaletteCommands() []PaletteCommand {
	return []PaletteCommand{
		{CommandRunExample, "Run Example", "run the example under the cursor and show its answer"},
		{CommandTestFile, "Test File", "test every example of the file"},
		{CommandRunWithInput, "Run With Input…", "send text you type to the agent, with nothing to check"},
		{CommandExplain, "Explain Last Test Failure", "why the last test of the file failed, rendered, offline"},
		{CommandShowRunReplay, "Show Run Replay", "replay the file's newest retained run in the replay panel, with zero model calls"},
		{CommandClearJournals, "Clear Journals", "delete retained runs that are not executing"},
		{CommandSelectModel, "Select Model", "pick the model for runs and tests (sets kmx.model)"},
		{CommandSetEndpointCredential, "Set Endpoint Credential", "keep the endpoint's credential in VS Code's secret storage"},
		{CommandShowLogs, "Show Logs", "show the sidecar's log (the kmx output channel)"},
		{CommandRestartServer, "Restart Language Server", "stop and start kmx lsp"},
		{CommandOpenChat, "Open Chat", "open the file's durable conversation in the chat panel"},
		{CommandAddExamples, "Add Examples", "add an examples skeleton, beside the file or in it (from the lens)"},
		{CommandRegradeLastRun, "Re-grade Last Run", "judge the newest test run's journaled answers again, with zero agent model calls (from the lens)"},
		{CommandCompareModels, "Compare Models…", "test the file on two or more models you pick and show the grid, the examples where they disagree highlighted"},
		{CommandCompareRuns, "Compare With Previous Run", "compare a run with the previous run of its file in the replay panel, offline"},
	}
}

// SettingsSection is the configuration section of every kmx setting; the
// client sends it whole in workspace/didChangeConfiguration.
const SettingsSection = "kmx"

// SettingSpec is one VS Code setting, SettingsSection + "." + Key, as
// package.json declares it. A Key that is a json name of Settings is sent
// to the server as that field; the others are read by the extension alone.
type SettingSpec struct {
	Key string
	// Type is the JSON schema type: "string" or "integer".
	Type string
	// Enum lists the allowed values, when only some are.
	Enum    []string
	Default any
	// Minimum and Maximum bound an integer, when both are set.
	Minimum, Maximum *int
	// Scope is VS Code's setting scope ("machine", "machine-overridable");
	// empty is VS Code's default (window).
	Scope string
	// Description is the settings editor's text (Markdown).
	Description string
}

// SettingSpecs lists every setting in the order the settings editor shows
// them. Every Settings field has one (TestEverySettingIsDeclared).
func SettingSpecs() []SettingSpec {
	lo, hi := 1, invocation.MaxConcurrency
	return []SettingSpec{
		{Key: "sidecarPath", Type: "string", Default: "", Scope: "machine",
			Description: "Path to the `kmx` binary the extension starts as `kmx lsp`. Empty: the binary bundled with the extension."},
		{Key: "toolBindings", Type: "string", Default: "", Scope: "machine",
			Description: "Absolute path of a `kmx.local-tools/v1` binding file (see docs/tools.md) for the one live GitHub read, passed to the sidecar at start (`kmx lsp --tool-bindings`). It names the credential's environment variable, never the credential. Empty: no binding; recordings and the stub answer offline."},
		{Key: "model", Type: "string", Default: "",
			Description: "Model for runs and tests, overriding each file's `model:` (set it with **kmx: Select Model**). Empty: the file's model, else the default. `fake` is the offline deterministic model. Without `#kmx.endpoint#`, a non-fake model is one VS Code offers (an id, a name or `Name (vendor)`)."},
		{Key: "endpoint", Type: "string", Default: "", Scope: "machine-overridable",
			Description: "OpenAI-compatible base URL (HTTPS, or keyless HTTP on 127.0.0.1/::1). Never put a credential here: name its environment variable in `#kmx.keyEnv#`."},
		{Key: "keyEnv", Type: "string", Default: "", Scope: "machine-overridable",
			Description: "The NAME of the environment variable holding the endpoint's bearer credential (for example `OPENAI_API_KEY`), never the credential itself. The sidecar reads it at run time. Instead, **kmx: Set Endpoint Credential** keeps the credential in VS Code's secret storage; this setting, when set, wins."},
		{Key: "judgeEndpoint", Type: "string", Default: "", Scope: "machine-overridable",
			Description: "OpenAI-compatible base URL for `llmJudge` assertions. Empty: the agent's route."},
		{Key: "judgeKeyEnv", Type: "string", Default: "", Scope: "machine-overridable",
			Description: "The NAME of the environment variable holding the judge endpoint's credential, never the credential itself."},
		{Key: "trace.server", Type: "string", Enum: []string{"off", "messages", "verbose"}, Default: "off",
			Description: "Log the LSP messages between VS Code and `kmx lsp` in the **kmx LSP trace** output channel (the sidecar's own log is the **kmx** channel)."},
		{Key: "concurrency", Type: "integer", Default: invocation.DefaultConcurrency, Minimum: &lo, Maximum: &hi,
			Description: "How many examples a run or test sends at once (1 to 32). Results stay in file order; `1` runs them one at a time. Each example still gets its own journaled session, and a failure stops further sends and cancels the examples in flight."},
	}
}
