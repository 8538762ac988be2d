package agentfile

import "fmt"

// DiagnosticLine renders a diagnostic as every front prints it:
// "file:line:col: severity CODE message", line and column 1-based; file is
// the one the diagnostic is in (the agent file at agentPath, or its
// examples file).
func DiagnosticLine(agentPath string, d Diagnostic) string {
	return fmt.Sprintf("%s:%d:%d: %s %s %s", d.In(agentPath), d.Range.Start.Line+1, d.Range.Start.Character+1, d.Severity, d.Code, d.Message)
}
