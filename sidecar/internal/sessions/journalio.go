package sessions

import (
	"context"
	"errors"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// record is a record of the current schema version. turn is 0 for
// session.placed, which belongs to the session rather than to a turn.
func record(sessionID string, turn int, kind journal.Kind, payload []byte) journal.Record {
	return journal.Record{SessionID: sessionID, Turn: turn, Kind: kind, Version: journal.SchemaVersion, Payload: payload}
}

// turnWriter journals one turn's records in as few commits as the
// guarantees allow. It holds records until one must be durable: a model
// request or a tool call is committed, with everything held before it,
// before the harness may act on it (commit); the rest of the turn is
// committed with its turn.terminal in one transaction (finish). The first
// commit also carries the records the turn began with, so a chat turn is two
// commits: [session.placed,] turn.started and model.request, before the
// send; model.completion and turn.terminal after it. Each commit is all or
// nothing; a kill between them leaves a turn without its terminal:
// incomplete, never a pass, and never a send without its record.
type turnWriter struct {
	journal   *journal.Journal
	sessionID string
	// ctx is the caller's. The first commit uses it: a caller gone before
	// anything was sent leaves nothing behind. Later commits record what
	// already happened, so they are detached from it and bounded instead.
	ctx  context.Context
	held []journal.Record
	// started: the first commit succeeded, so the turn is in the journal.
	started bool
	// journaled, if not nil, is called after the first commit.
	journaled func()
}

func (w *turnWriter) add(r journal.Record) { w.held = append(w.held, r) }

// commit commits every held record in one transaction. On an error none of
// them was written and they are dropped: the harness was not told to act on
// them.
func (w *turnWriter) commit() error {
	ctx, cancel := w.ctx, context.CancelFunc(func() {})
	if w.started {
		ctx, cancel = context.WithTimeout(context.WithoutCancel(w.ctx), detachedWriteTimeout)
	}
	defer cancel()
	held := w.held
	w.held = w.held[:0] // AppendAll copies what it commits
	if _, err := w.journal.AppendAll(ctx, held); err != nil {
		return err
	}
	if !w.started {
		w.started = true
		if w.journaled != nil {
			w.journaled()
		}
	}
	return nil
}

// finish commits the turn.terminal record with everything still held.
func (w *turnWriter) finish(t journal.TurnTerminal) error {
	payload, err := journal.Encode(t)
	if err != nil {
		return err
	}
	w.add(record(w.sessionID, t.Turn, journal.KindTurnTerminal, payload))
	return w.commit()
}

// readSession returns the session's records in journal order; the journal
// verifies its hash chain first.
func (s *service) readSession(ctx context.Context, sessionID string) ([]journal.Record, error) {
	return s.journal.Records(ctx, sessionID)
}

func isTampered(err error) bool { return errors.Is(err, journal.ErrTampered) }
