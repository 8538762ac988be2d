package ghreadtest

import "testing"

// Use starts a fixture for one test, points the test build's reads at it
// (t.Setenv, so the test cannot run in parallel) and stops it at the end.
func Use(t testing.TB, o Options) *Fixture {
	t.Helper()
	f, err := Start(t.TempDir(), o)
	if err != nil {
		t.Fatalf("start the GitHub MCP fixture: %v", err)
	}
	t.Cleanup(f.Close)
	t.Setenv(EndpointEnv, f.URL)
	t.Setenv(CAEnv, f.CAFile)
	return f
}
