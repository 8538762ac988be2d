// Package localtools owns the tools an agent file declares, offline: the
// strict reading of kmx.yaml beside the agent's physical file (never a parent
// folder or the workspace), the per-example tool set frozen at run start (each
// declared name with its state and its source: Disabled, a saved recording,
// the bounded unavailable stub, or a live binding), the bounds of the
// kmx-local-tools-v1 harness, and the whole-batch validation that runs before
// the first call.
//
// Nothing here calls a network, a model or a native tool, and nothing here
// ever rewrites kmx.yaml or the agent file. A live binding (the
// --tool-bindings file, read by ReadBinding) only marks a tool's source
// live: the read itself is the host's executor (ghread, wired by
// the invocation package). A declared name without a recording or binding is offered
// as the unavailable stub, never silently dropped.
package localtools
