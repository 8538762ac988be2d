package conversation

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// StatePending is a turn whose outcome is not recorded yet while its
// writer (this process or another) still holds the conversation: it is
// running now. Only a reader sees it, and only for the last turn.
const StatePending = "pending"

// readTries bounds how often read takes a new snapshot when a turn ends
// (or a refusal is being recorded) while it looks.
const readTries = 4

// read returns the history as a snapshot of the conversation's journal
// shows it, rebuilt by replay with zero model calls, without taking the
// conversation's lock: it neither waits for a turn under way nor makes one
// wait. Only committed records are read; a last turn with no outcome is
// StatePending while the lock is held and StateUnfinished once it is not
// (its process ended mid-turn). It returns nil for a conversation with no
// journal. The Conversation returned is closed: it only reports.
func read(ctx context.Context, opts Options) (*Conversation, error) {
	id, path, err := opts.location()
	if err != nil {
		return nil, err
	}
	dir := journal.ConversationsDir(opts.StateDir)
	key := Key(path, id)
	lacking := 0 // a turn whose outcome the last snapshot lacked, lock free
	for try := 1; ; try++ {
		c, err := snapshot(ctx, dir, key, id, path)
		if err != nil || c == nil {
			// A refusal while the lock is held can be a writer between two
			// records (a reply refused after its terminal): look again.
			if _, ok := AsRefusal(err); ok && try < readTries {
				if held, herr := journal.ConversationHeld(dir, key); herr == nil && held {
					time.Sleep(20 * time.Millisecond)
					continue
				}
			}
			return c, err
		}
		u := c.Unfinished()
		if u == nil {
			return c, nil
		}
		// Lock free between two snapshots that both lack turn N's outcome:
		// a holder writes the outcome before it lets go, so its process
		// ended mid-turn.
		if u.N == lacking {
			return c, nil
		}
		held, err := journal.ConversationHeld(dir, key)
		if err != nil {
			return nil, unsafeRefusal(err)
		}
		if held || try >= readTries {
			c.turns[len(c.turns)-1].State = StatePending
			return c, nil
		}
		lacking = u.N
	}
}

// snapshot reads and replays the journal once, through a read-only
// connection that it closes before returning.
func snapshot(ctx context.Context, dir, key, id, path string) (*Conversation, error) {
	j, err := journal.ReadConversation(ctx, dir, key)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, journal.ErrTampered):
		return nil, divergence(0, "journal tampered")
	case err != nil:
		return nil, unsafeRefusal(err)
	}
	c := &Conversation{j: j, id: id, path: path, key: key, agent: agentID(path)}
	err = c.load(ctx)
	if cerr := j.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("read conversation %s: %w", id, cerr)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}
