package cli

import "context"

func runCheck(_ context.Context, _ Env, _ []string) error {
	return &RefusalError{Msg: "check is being built", Next: "wait for the agent file language"}
}
