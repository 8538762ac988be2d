package agentfile

import (
	"fmt"
	"strings"
)

// FormatDiagnostics renders diagnostics the way `kmx check` prints them:
// one "line:col severity CODE message" line each, line and column 1-based,
// prefixed with "FILE:" for a diagnostic in a sibling examples file.
func FormatDiagnostics(diags []Diagnostic) string {
	var b strings.Builder
	for _, d := range diags {
		if d.File != "" {
			b.WriteString(d.File + ":")
		}
		fmt.Fprintf(&b, "%d:%d %s %s %s\n", d.Range.Start.Line+1, d.Range.Start.Character+1, d.Severity, d.Code, d.Message)
	}
	return b.String()
}

// In returns the path of the file the diagnostic is in, given the agent
// file's path: the agent file, or its sibling examples file.
func (d Diagnostic) In(agentPath string) string {
	if d.File == "" {
		return agentPath
	}
	return agentPath[:strings.LastIndexAny(agentPath, `/\`)+1] + d.File
}
