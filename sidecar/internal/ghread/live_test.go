//go:build !kmxtest

package ghread

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

// Variables of the opt-in hosted read.
const (
	// liveTokenEnvEnv names the variable that holds the NAME of the
	// variable holding a GitHub token (so the token itself is never in a
	// KMX_ variable or a command line).
	liveTokenEnvEnv = "KMX_LIVE_GITHUB_TOKEN_ENV"
	// liveRepoEnv is OWNER/REPO, in GitHub's canonical letter case.
	liveRepoEnv = "KMX_LIVE_GITHUB_REPOSITORY"
)

// TestHostedMCPRead is the opt-in read from GitHub's hosted read-only MCP
// server, with the build a user gets (no test endpoint override). It
// checks the pinned handshake, the remote schema and the projection
// against the real server, and prints counts only, never PR content. It
// is not run by make test (no network there); the offline replay of such
// a read from a journal is tested with the owned fixture.
//
//	KMX_LIVE_GITHUB_TOKEN_ENV=GITHUB_MCP_TOKEN KMX_LIVE_GITHUB_REPOSITORY=owner/repo \
//	  go test -count=1 -run TestHostedMCPRead ./sidecar/internal/ghread/
func TestHostedMCPRead(t *testing.T) {
	tokenEnv, repository := os.Getenv(liveTokenEnvEnv), os.Getenv(liveRepoEnv)
	if tokenEnv == "" || repository == "" {
		t.Skipf("opt-in: set %s to the name of a variable holding a GitHub token and %s to OWNER/REPO to read from %s", liveTokenEnvEnv, liveRepoEnv, "https://api.githubcopilot.com/mcp/readonly")
	}
	token := os.Getenv(tokenEnv)
	if token == "" {
		t.Fatalf("%s names %s, which is unset or empty", liveTokenEnvEnv, tokenEnv)
	}
	text, err := Read(context.Background(), Config{Repository: repository, Token: token})
	if err != nil {
		t.Fatalf("the hosted read failed: %v", err)
	}
	var r Result
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		t.Fatalf("the projected result is not JSON: %v", err)
	}
	if r.Repository != repository {
		t.Fatalf("the result names another repository than %s", repository)
	}
	for _, pr := range r.PullRequests {
		if pr.Number <= 0 || pr.Title == "" {
			t.Fatalf("a projected pull request lacks its number or title")
		}
	}
	t.Logf("hosted read of %s: %d merged pull requests on the first page of %d (%d bytes projected; content not printed)", repository, len(r.PullRequests), PerPage, len(text))
}
