//go:build kmxtest

package ghreadtest_test

import (
	"context"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/ghread"
	"github.com/kmxdev/kmx/sidecar/internal/ghread/ghreadtest"
)

// TestOverrideReachesTheFixture: in a test build the override variables
// send a read to the fixture (and only there), which counts it.
func TestOverrideReachesTheFixture(t *testing.T) {
	f := ghreadtest.Use(t, ghreadtest.Options{Items: []ghreadtest.Item{
		{Number: 3, Title: "Merged", Repository: "octo/Repo", Merged: true},
		{Number: 4, Title: "Open", Repository: "octo/Repo"},
	}})
	got, err := ghread.Read(context.Background(), ghread.Config{Repository: "octo/Repo", Token: "fixture-token-value"})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if want := `{"repository":"octo/Repo","pullRequests":[{"number":3,"title":"Merged"}]}`; got != want {
		t.Fatalf("Read = %s, want %s", got, want)
	}
	if f.Calls() != 1 || f.Requests() == 0 {
		t.Fatalf("fixture saw %d calls, %d requests", f.Calls(), f.Requests())
	}
}

// TestOverrideIsLoopbackOnly: the override refuses a non-loopback URL.
func TestOverrideIsLoopbackOnly(t *testing.T) {
	t.Setenv(ghreadtest.EndpointEnv, "https://example.com/mcp/readonly")
	_, err := ghread.Read(context.Background(), ghread.Config{Repository: "octo/Repo", Token: "x"})
	if err == nil {
		t.Fatal("a read went to a non-loopback override")
	}
}
