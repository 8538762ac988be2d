// Package vscodetools is kmx's versioned table of VS Code's built-in tool
// references: the names an agent file's `tools:` list uses (`edit/editFiles`,
// `search/codebase`, the older bare `codebase`, the tool sets `edit`,
// `search`, ...), what each offers a model (a description and an input JSON
// schema shaped like VS Code's), the function name it is offered under on a
// route whose endpoint accepts only `^[A-Za-z0-9_-]{1,64}$`, and the
// `vscode.lm.tools` entry VS Code registers for it (its id), which the
// editor route binds to.
//
// Resolve turns one declared reference into the tools it stands for: one
// tool, a set's members, a stub for an MCP server reference (`server/*`,
// `server/tool`) with no known definition, or, for a name the table does not
// know, a stub marked Unknown (agent files get a KMX4007 warning for it;
// the name is never dropped). Nothing here reads files, calls VS Code or
// touches the network: the table is data compiled into kmx.
package vscodetools
