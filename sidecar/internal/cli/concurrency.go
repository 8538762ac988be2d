package cli

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
)

// concurrencyFlag is --concurrency N: how many examples run at once, 1 to
// invocation.MaxConcurrency. Anything else is a usage error naming the
// range, before anything runs.
type concurrencyFlag struct{ n int }

func (c *concurrencyFlag) String() string {
	if c == nil || c.n == 0 {
		return strconv.Itoa(invocation.DefaultConcurrency)
	}
	return strconv.Itoa(c.n)
}

func (c *concurrencyFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > invocation.MaxConcurrency {
		return fmt.Errorf("give a whole number from 1 to %d (1 runs the examples one at a time)", invocation.MaxConcurrency)
	}
	c.n = n
	return nil
}

// registerConcurrency adds --concurrency to a command that runs examples.
func (r *routeFlags) registerConcurrency(fs *flag.FlagSet) {
	fs.Var(&r.concurrency, "concurrency", fmt.Sprintf("how many examples run at once, `N` from 1 to %d; results stay in file order", invocation.MaxConcurrency))
}
