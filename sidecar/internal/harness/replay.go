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
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
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

// replayModel answers the recorded requests in order, each only when its
// digest matches, with the recorded completion. Every other call is refused
// and counted as an attempted live call; nothing here can reach a network.
// A chat turn has one recorded send; a tool turn one to eight.
type replayModel struct {
	model   string
	sends   []recordedSend
	next    atomic.Int32
	refused atomic.Int32
}

type recordedSend struct {
	request    journal.ModelRequest
	completion journal.ModelCompletion
}

func newReplayModel(model string, rec *sessionspb.RecordedExchange) (*replayModel, error) {
	m := &replayModel{model: model}
	// A chat turn's one send, or a tool turn's sends in order.
	pairs := [][2][]byte{{rec.GetRequestJson(), rec.GetCompletionJson()}}
	if sends := rec.GetSends(); len(sends) > 0 {
		if len(rec.GetRequestJson()) > 0 || len(rec.GetCompletionJson()) > 0 || len(sends) > MaxWorkspaceSends {
			return nil, errors.New("recorded exchange holds a chat send beside its tool sends, or too many sends")
		}
		pairs = pairs[:0]
		for _, s := range sends {
			pairs = append(pairs, [2][]byte{s.GetRequestJson(), s.GetCompletionJson()})
		}
	}
	for _, p := range pairs {
		var rs recordedSend
		if err := journal.Decode(p[0], &rs.request); err != nil {
			return nil, fmt.Errorf("recorded model request: %w", err)
		}
		if err := journal.Decode(p[1], &rs.completion); err != nil {
			return nil, fmt.Errorf("recorded model completion: %w", err)
		}
		if rs.request.SHA256 == "" {
			return nil, errors.New("recorded model request has no digest")
		}
		m.sends = append(m.sends, rs)
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
	i := int(m.next.Add(1)) - 1
	if err != nil || i >= len(m.sends) || sum != m.sends[i].request.SHA256 || size != m.sends[i].request.Bytes {
		m.refused.Add(1)
		return route.Completion{}, errReplayRefused
	}
	c := m.sends[i].completion
	out := route.Completion{Model: c.Model, Text: c.Text, FinishReason: c.FinishReason}
	if u := c.Usage; u != nil {
		out.Usage = &route.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	}
	for _, tc := range c.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, route.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	return out, nil
}

// liveCalls is the number of refused (would-be live) calls so far.
func (m *replayModel) liveCalls() int32 { return m.refused.Load() }
