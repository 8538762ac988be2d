package cli

// journal_replay.go holds what kmx journal inspect and kmx journal diff
// share: both check run IDs, replay retained runs from the journal folder
// with zero model calls, and print the result as text or JSON.

import (
	"context"
	"fmt"
	"io"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// checkRunIDs refuses the first argument that is not a run ID.
func checkRunIDs(cmd string, runs ...string) error {
	for _, run := range runs {
		if !journal.ValidRunID(run) {
			return usagef("run kmx journal list and pass a run ID from it", "%s: %q is not a run ID (a journal file name without .db, like 20261130T162341.123456789Z-0a1b2c3d)", cmd, run)
		}
	}
	return nil
}

// replayJournal runs replay on the journal folder. A folder that does not
// exist yet is the refusal none; the replay's own refusals, and a replay
// that stopped before it finished, are refusals too.
func replayJournal[T any](ctx context.Context, env Env, cmd string, none *RefusalError, replay func(ctx context.Context, dir string) (T, error)) (T, error) {
	var zero T
	dir, exists, err := journalDir(cmd, env)
	if err != nil {
		return zero, err
	}
	if !exists {
		return zero, none
	}
	out, err := replay(ctx, dir)
	if err != nil {
		if r, ok := invocation.AsRefusal(err); ok {
			return zero, &RefusalError{Msg: cmd + ": " + r.Msg, Next: r.Next}
		}
		return zero, &RefusalError{Msg: cmd + ": the replay stopped before it finished: " + err.Error(), Next: "run it again; each replay is bounded to 2 minutes"}
	}
	return out, nil
}

// showReplay prints a replay as JSON or as text. A replay must never reach
// a model: the calls were refused, but a count above zero means kmx is
// broken and the user must know.
func showReplay(env Env, asJSON bool, v any, text func(io.Writer), liveCalls int) error {
	if asJSON {
		if err := encodeJSON(env.Stdout, v); err != nil {
			return err
		}
	} else {
		text(env.Stdout)
	}
	if liveCalls != 0 {
		fmt.Fprintf(env.Stderr, "kmx: the replay attempted %s; each was refused, but this is a kmx bug: please report it\n", plural(liveCalls, "model call"))
		return &FailureError{Msg: "live calls during replay"}
	}
	return nil
}
