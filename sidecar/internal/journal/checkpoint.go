package journal

import (
	"context"
	"fmt"
)

// Checkpoints run beside the writer. SQLite's automatic checkpoint runs on
// the connection that commits, inside the commit that crosses its
// threshold, so the writer's lock was held while the WAL was copied into
// the database and both files were flushed (a 2,000-example run made about
// 15 checkpoints, 30 fsyncs, 0.1 s of fsync on this machine): every other
// commit waited for them. Now every ckEveryCommits commits, the leader of
// the group that reached it starts a PASSIVE checkpoint on a connection of
// its own, after it has released the writer's lock. Commits and read-backs
// go on meanwhile: a PASSIVE checkpoint never waits for them and copies
// only frames no reader still needs.
//
// The WAL restarts from its start only at a commit that finds every frame
// already in the database, and commits made during a checkpoint beside them
// leave new frames, so these checkpoints rarely let it restart. The
// writer's own automatic checkpoint stays, at ckBackstopPages, for that
// (and for a checkpointer that cannot open); by then the checkpoints beside
// it have copied nearly everything. The WAL of a long run levels off at
// about 10 MiB (4 MiB before); Finish waits for a checkpoint in progress
// and then checkpoints (TRUNCATE) on the writer as before.

const (
	// ckEveryCommits is how many commits go between two checkpoints: at
	// the 2-5 WAL frames a commit writes, about SQLite's default of 1,000
	// frames.
	ckEveryCommits = 250
	// ckBackstopPages is the writer's own automatic checkpoint threshold
	// (SQLite's default is 1,000): measured against 1,000 and 4,000 in
	// docs/benchmarks.md, "Journal".
	ckBackstopPages = 2000
)

// countCommitLocked counts a commit that wrote records and reports whether
// it is time for a checkpoint; if so, a checkpoint is registered with ckwg,
// and the caller must start it (startCheckpoint). j.mu must be held.
func (j *Journal) countCommitLocked() bool {
	j.sinceCk++
	if j.sinceCk < ckEveryCommits || j.closed {
		return false
	}
	j.sinceCk = 0
	j.ckwg.Add(1)
	return true
}

// startCheckpoint runs a checkpoint registered by countCommitLocked on its
// own goroutine.
func (j *Journal) startCheckpoint() {
	go func() {
		defer j.ckwg.Done()
		// An error leaves the WAL to the next checkpoint, or to the
		// writer's backstop; Finish's TRUNCATE checkpoint reports what it
		// cannot do.
		_, _, _ = j.checkpoint()
	}()
}

// checkpoint runs a PASSIVE checkpoint on the checkpoint connection,
// opening it on first use, unless one is running already (then it does
// nothing and returns zeros). It returns the WAL's frames and how many of
// them are now in the database. It never takes the writer's lock.
func (j *Journal) checkpoint() (walFrames, checkpointed int, err error) {
	if !j.cmu.TryLock() {
		return 0, 0, nil
	}
	defer j.cmu.Unlock()
	if j.ckClosed {
		return 0, 0, nil
	}
	ctx := context.Background()
	if j.ck == nil {
		ck, err := openConn(ctx, j.dbPath, checkpointConn)
		if err != nil {
			return 0, 0, fmt.Errorf("checkpoint journal %s: %w", j.id, err)
		}
		j.ck = ck
	}
	var busy int
	if err := j.ck.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &walFrames, &checkpointed); err != nil {
		return 0, 0, fmt.Errorf("checkpoint journal %s: %w", j.id, err)
	}
	return walFrames, checkpointed, nil
}

// closeCheckpointerLocked waits for a checkpoint in progress and closes the
// checkpoint connection. j.mu must be held (so no new checkpoint is
// registered).
func (j *Journal) closeCheckpointerLocked() error {
	j.ckwg.Wait()
	j.cmu.Lock()
	defer j.cmu.Unlock()
	j.ckClosed = true
	err := j.ck.close()
	j.ck = nil
	return err
}
