package agentfile

import (
	"fmt"
	"strings"
)

// FormatDiagnostics renders diagnostics the way `kmx check` prints them:
// one "line:col severity CODE message" line each, line and column 1-based.
func FormatDiagnostics(diags []Diagnostic) string {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "%d:%d %s %s %s\n", d.Range.Start.Line+1, d.Range.Start.Character+1, d.Severity, d.Code, d.Message)
	}
	return b.String()
}
