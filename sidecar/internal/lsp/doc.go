// Package lsp is kmx's language server (`kmx lsp`): JSON-RPC 2.0 over a
// stream (stdio in production), speaking LSP plus the kmx contract in
// contract.go to the VS Code extension.
//
// It owns the protocol session: the lifecycle state machine, the open
// documents and their versions (one owner, the store in store.go: handlers
// open, change and close documents through it and read immutable
// snapshots), the editor's settings, progress and cancellation of running
// work, and the conversion between LSP types and the engine's. Every
// decision about an agent file is delegated: parsing and diagnostics to
// agentfile, refusals before a run to invocation, running and testing to
// runner, replays and comparisons of retained runs to readback, Explain to
// failures. One file per LSP method; each only converts and delegates.
//
// It never writes anything but protocol to its stream (logs go to the
// slog.Logger it is given, stderr in production), never holds or logs a
// credential value (settings carry variable names only), never publishes
// diagnostics for an older document version over a newer one, and never
// crashes on a broken invariant: a panicking handler is answered with an
// internal error and logged.
package lsp
