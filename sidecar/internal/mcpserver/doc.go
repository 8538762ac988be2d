// Package mcpserver is kmx's MCP front: it offers the tools Run, Test and
// Explain to any MCP client, over stdio (kmx mcp) or, for the conformance
// suite only, Streamable HTTP on a loopback address.
//
// It owns the MCP wiring: tool definitions with typed, schema-tagged
// arguments, the text summary beside each structured report, and the mapping
// of refusals to isError tool results. It never decides anything the engine
// does not: Run and Test call runner.Run/Test and Explain calls
// failures.Explain, exactly as the CLI does, so verdicts, refusals and
// journals are the same. It never takes an endpoint or a credential from a
// tool argument or an agent file (only from Config, fixed at startup), never
// writes anything but protocol to its output, and never reports an unknown
// verdict as a pass.
package mcpserver
