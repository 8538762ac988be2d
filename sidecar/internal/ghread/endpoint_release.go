//go:build !kmxtest

package ghread

import (
	"os"

	"github.com/kmxdev/kmx/sidecar/internal/localtools"
)

// TestEndpointBuild reports whether this build honours the test-only
// endpoint override. It is false in every shipped build.
const TestEndpointBuild = false

// resolveTarget is always GitHub's read-only server. A set override
// variable refuses the read: this build has no override, and a run meant
// for a fixture must not go to GitHub with a credential instead.
func resolveTarget() (target, error) {
	if os.Getenv(TestEndpointEnv) != "" {
		return target{}, fail("%s is set, but this build of kmx has no test endpoint (only test builds, with the kmxtest tag, have one); unset it to read from %s", TestEndpointEnv, localtools.GitHubMCPURL)
	}
	return target{endpoint: localtools.GitHubMCPURL, base: newBaseTransport(), timeout: Timeout}, nil
}
