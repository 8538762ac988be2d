package cli

import (
	"context"
	"fmt"
)

// Version is the kmx release; the sidecar and the extension share it.
const Version = "0.1.0"

func runVersion(_ context.Context, env Env, args []string) error {
	if len(args) > 0 {
		return usagef("run 'kmx version' with no arguments", "version takes no arguments")
	}
	fmt.Fprintf(env.Stdout, "kmx %s (local preview)\n", Version)
	return nil
}
