package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessions/sessionspb"
)

// errReplayRefused is what the replay model answers to any call its recording
// does not cover. It is fixed text: the refused request is never echoed.
var errReplayRefused = errors.New(ErrTextReplayRefusal)

// RequestDigest returns the SHA-256 (lower-case hex) and byte size of the
// canonical JSON of req: encoding/json of route.Request, whose field order is
// fixed by the struct. The live harness journals it; replay must arrive at
// the same digest from the journaled instructions, input and model.
func RequestDigest(req route.Request) (sum string, size int, err error) {
	b, err := json.Marshal(req)
	if err != nil {
		return "", 0, fmt.Errorf("encode model request for digest: %w", err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), len(b), nil
}

// replayModel answers exactly one request, the one whose digest the
// recording holds, with the recorded completion. Every other call is refused
// and counted as an attempted live call; nothing here can reach a network.
type replayModel struct {
	model      string
	request    journal.ModelRequest
	completion journal.ModelCompletion
	answered   atomic.Bool
	refused    atomic.Int32
}

func newReplayModel(model string, rec *sessionspb.RecordedExchange) (*replayModel, error) {
	m := &replayModel{model: model}
	if err := journal.Decode(rec.GetRequestJson(), &m.request); err != nil {
		return nil, fmt.Errorf("recorded model request: %w", err)
	}
	if err := journal.Decode(rec.GetCompletionJson(), &m.completion); err != nil {
		return nil, fmt.Errorf("recorded model completion: %w", err)
	}
	if m.request.SHA256 == "" {
		return nil, errors.New("recorded model request has no digest")
	}
	return m, nil
}

func (m *replayModel) Identity() route.Identity {
	return route.Identity{Route: route.Replay, Model: m.model}
}

func (m *replayModel) Complete(ctx context.Context, req route.Request) (route.Completion, error) {
	if err := ctx.Err(); err != nil {
		return route.Completion{}, err
	}
	sum, size, err := RequestDigest(req)
	if err != nil || sum != m.request.SHA256 || size != m.request.Bytes || !m.answered.CompareAndSwap(false, true) {
		m.refused.Add(1)
		return route.Completion{}, errReplayRefused
	}
	return route.Completion{Model: m.completion.Model, Text: m.completion.Text, FinishReason: m.completion.FinishReason}, nil
}

// liveCalls is the number of refused (would-be live) calls so far.
func (m *replayModel) liveCalls() int32 { return m.refused.Load() }
