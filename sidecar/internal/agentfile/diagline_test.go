package agentfile

import "testing"

func TestDiagnosticLine(t *testing.T) {
	d := Diagnostic{Range: Range{Start: Position{Line: 4, Character: 2}}, Severity: SeverityError, Code: "KMX1", Message: "bad"}
	if got, want := DiagnosticLine("a.agent.md", d), "a.agent.md:5:3: error KMX1 bad"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
