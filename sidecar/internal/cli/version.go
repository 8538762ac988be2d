package cli

import (
	"context"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/version"
)

// Version is the kmx release.
const Version = version.Version

func runVersion(_ context.Context, env Env, args []string) error {
	if isHelp(args) {
		return &HelpRequest{Text: "Usage: kmx version\n\nPrints the kmx version. It takes no flags.\n"}
	}
	if len(args) > 0 {
		return usagef("run 'kmx version' with no arguments", "version takes no arguments")
	}
	fmt.Fprintf(env.Stdout, "kmx %s (local preview)\n", Version)
	return nil
}
