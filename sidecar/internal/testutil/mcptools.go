package testutil

import (
	"strings"
	"testing"
	"time"
)

// MCPTools are the third-party MCP test clients and suite that
// scripts/mcp-tools.sh installs by name from npm into a cache outside the
// repository: a Node 24 runtime, the official inspector CLI and the MCP
// conformance suite (entry scripts, run with Node).
type MCPTools struct {
	Node, Inspector, Conformance string
}

// InstallMCPTools runs scripts/mcp-tools.sh (cached, so cheap when the
// pinned versions are installed). It skips only when CI is unset and npm
// is missing; under CI=true a missing npm fails, so the tests that need
// these tools are never silently skipped in CI.
func InstallMCPTools(tb testing.TB) MCPTools {
	tb.Helper()
	out := installFromNPM(tb, "mcp-tools.sh", 8*time.Minute,
		"skipping the MCP inspector and conformance tests (install npm to run them)",
		"the MCP inspector and conformance tests must run")
	var mt MCPTools
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "NODE":
			mt.Node = v
		case "INSPECTOR":
			mt.Inspector = v
		case "CONFORMANCE":
			mt.Conformance = v
		}
	}
	if mt.Node == "" || mt.Inspector == "" || mt.Conformance == "" {
		tb.Fatalf("scripts/mcp-tools.sh printed %q, want NODE=, INSPECTOR= and CONFORMANCE= lines", out)
	}
	return mt
}
