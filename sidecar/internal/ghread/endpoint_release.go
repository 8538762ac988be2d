//go:build !kmxtest

package ghread

import "net/http"

// testEndpoint is the endpoint override of test builds. A shipped build
// (built without -tags kmxtest) has none: every read goes to
// localtools.GitHubMCPURL, whatever the environment says.
func testEndpoint() (string, http.RoundTripper, error) { return "", nil, nil }
