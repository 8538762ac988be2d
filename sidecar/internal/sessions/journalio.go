package sessions

import (
	"context"
	"errors"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// append commits one record of the current schema version. turn is 0 for
// session.placed, which belongs to the session rather than to a turn.
func (s *service) append(ctx context.Context, sessionID string, turn int, kind journal.Kind, payload []byte) error {
	_, err := s.journal.Append(ctx, journal.Record{
		SessionID: sessionID, Turn: turn, Kind: kind, Version: journal.SchemaVersion, Payload: payload,
	})
	return err
}

// readSession returns the session's records in journal order; the journal
// verifies its hash chain first.
func (s *service) readSession(ctx context.Context, sessionID string) ([]journal.Record, error) {
	return s.journal.Records(ctx, sessionID)
}

func isTampered(err error) bool { return errors.Is(err, journal.ErrTampered) }
