package lsp

// The standard LSP messages kmx speaks, declared here rather than taken
// from go.lsp.dev/protocol, so every message of the server (standard or
// kmx's own) has one vocabulary and its exact JSON shape in this package.
// The reason is that package's fit, not taste: it follows LSP 3.15, its
// TextDocumentContentChangeEvent cannot express a whole-document change
// (its range is not optional; see contentChange), and its CancelHandler
// refuses every numeric request ID (see cancelRequestHandler). The server
// speaks about fifteen standard messages and reads few of their fields, so
// declaring them costs a few small structs. The feature files declare the
// messages they alone use (codeLens, codeAction, diagnostics, progress);
// the ones shared or used once by the lifecycle are here.

// initializeResult is InitializeResult: what the server offers.
type initializeResult struct {
	Capabilities serverCapabilities `json:"capabilities"`
	ServerInfo   *serverInfo        `json:"serverInfo,omitempty"`
}

type serverCapabilities struct {
	TextDocumentSync   *textDocumentSyncOptions `json:"textDocumentSync,omitempty"`
	CodeActionProvider *codeActionOptions       `json:"codeActionProvider,omitempty"`
	CodeLensProvider   *codeLensOptions         `json:"codeLensProvider,omitempty"`
	Experimental       map[string]any           `json:"experimental,omitempty"`
}

// textDocumentSyncKindIncremental is TextDocumentSyncKind.Incremental.
const textDocumentSyncKindIncremental = 2

type textDocumentSyncOptions struct {
	OpenClose bool         `json:"openClose,omitempty"`
	Change    int          `json:"change,omitempty"`
	Save      *saveOptions `json:"save,omitempty"`
}

type saveOptions struct {
	IncludeText bool `json:"includeText,omitempty"`
}

type codeLensOptions struct {
	ResolveProvider bool `json:"resolveProvider,omitempty"`
}

// codeActionKindQuickFix is CodeActionKind.QuickFix.
const codeActionKindQuickFix = "quickfix"

type codeActionOptions struct {
	CodeActionKinds []string `json:"codeActionKinds,omitempty"`
}

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// messageTypeError is MessageType.Error.
const messageTypeError = 1

// showMessageParams is window/showMessage's params.
type showMessageParams struct {
	Type    int    `json:"type"`
	Message string `json:"message"`
}

// didChangeWatchedFilesParams is workspace/didChangeWatchedFiles' params.
type didChangeWatchedFilesParams struct {
	Changes []fileEvent `json:"changes"`
}

// fileEvent is one watched file's change (created 1, changed 2, deleted 3).
type fileEvent struct {
	URI  string `json:"uri"`
	Type int    `json:"type"`
}
