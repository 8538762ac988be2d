package conversation

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/sessions"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
)

// errNeverStarted is the Error of a turn whose session was placed but whose
// turn never started: nothing was sent, so it needs no discard.
const errNeverStarted = "the turn never started: nothing was sent"

// rawTurn is one turn session's records, decoded.
type rawTurn struct {
	n       int
	placed  journal.SessionPlaced
	started *journal.TurnStarted
	reply   *journal.ModelCompletion
	term    *journal.TurnTerminal
	mark    *journal.Record
}

// load reads the history from the journal (never from memory), checks it
// names one model identity and replays every answered turn with zero model
// calls to rebuild the history sent with the next turn.
func (c *Conversation) load(ctx context.Context) error {
	recs, err := c.j.Records(ctx, "")
	if err != nil {
		if errors.Is(err, journal.ErrTampered) {
			return divergence(0, "journal tampered")
		}
		return fmt.Errorf("read conversation %s: %w", c.id, err)
	}
	raws, err := collect(recs)
	if err != nil {
		return err
	}
	turns := make([]ChatTurn, 0, len(raws))
	var identity *route.Identity
	for i, r := range raws {
		id := route.Identity{Route: r.placed.Model.Route, Model: r.placed.Model.Model}
		if identity == nil {
			identity = &id
		} else if id != *identity {
			return identityHistory(*identity, id, r.n)
		}
		t := ChatTurn{N: r.n, Name: r.placed.ExampleID, SessionID: r.placed.SessionID, Model: id}
		if r.started != nil {
			t.Input = r.started.Input
		}
		switch {
		case r.mark != nil:
			var m Mark
			if journal.Decode(r.mark.Payload, &m) != nil {
				return divergence(r.n, "record malformed: "+string(r.mark.Kind))
			}
			t.State, t.Error = StateDiscarded, m.Reason
			if r.mark.Kind == KindRefused {
				t.State = StateRefused
			}
		case r.started == nil && r.term == nil:
			t.State, t.Error = StateFailed, errNeverStarted
		case r.term == nil:
			if i != len(raws)-1 {
				// Send refuses while a turn is unfinished, so only the last
				// one can be; anything else was not written by kmx.
				return divergence(r.n, "an earlier turn has no outcome")
			}
			t.State = StateUnfinished
		default:
			t.State, t.Error = terminalState(r.term.State), r.term.Error
			if t.State == StateAnswered && (r.reply == nil || r.reply.Model != id.Model) {
				replied := ""
				if r.reply != nil {
					replied = r.reply.Model
				}
				return identityHistory(id, route.Identity{Route: id.Route, Model: replied}, r.n)
			}
		}
		turns = append(turns, t)
	}

	history, live, err := c.replay(ctx, turns)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turns, c.identity, c.history, c.replayLiveCalls = turns, identity, history, live
	return nil
}

// collect groups the journal's records into turn sessions in order and
// attaches each conversation mark to its turn. Turn N must be the session
// named "turn:N".
func collect(recs []journal.Record) ([]*rawTurn, error) {
	var raws []*rawTurn
	bySession := map[string]*rawTurn{}
	var marks []journal.Record
	for _, r := range recs {
		if r.Version != journal.SchemaVersion {
			return nil, divergence(0, "record version unsupported: "+string(r.Kind))
		}
		if r.SessionID == markSession {
			if r.Kind != KindDiscarded && r.Kind != KindRefused {
				return nil, divergence(0, "record kind unknown")
			}
			marks = append(marks, r)
			continue
		}
		rt := bySession[r.SessionID]
		if r.Kind == journal.KindSessionPlaced {
			var p journal.SessionPlaced
			if rt != nil || journal.Decode(r.Payload, &p) != nil || p.SessionID != r.SessionID {
				return nil, divergence(len(raws)+1, "record malformed: "+string(r.Kind))
			}
			n, ok := turnNumber(p.ExampleID)
			if !ok || n != len(raws)+1 || p.Purpose != harness.PurposeAgent {
				return nil, divergence(len(raws)+1, "turns out of order")
			}
			rt = &rawTurn{n: n, placed: p}
			bySession[r.SessionID] = rt
			raws = append(raws, rt)
			continue
		}
		if rt == nil {
			return nil, divergence(0, "records out of order")
		}
		var err error
		switch r.Kind {
		case journal.KindTurnStarted:
			var v journal.TurnStarted
			err = journal.Decode(r.Payload, &v)
			rt.started = &v
		case journal.KindModelCompletion:
			// A tool turn has two sends: its reply is the last one's.
			var v journal.ModelCompletion
			err = journal.Decode(r.Payload, &v)
			rt.reply = &v
		case journal.KindTurnTerminal:
			var v journal.TurnTerminal
			err = journal.Decode(r.Payload, &v)
			rt.term = &v
		case journal.KindModelRequest, journal.KindToolCall, journal.KindToolResult:
			// Checked, with the rest of the turn, by its replay.
		default:
			err = errors.New("unknown kind")
		}
		if err != nil {
			return nil, divergence(rt.n, "record malformed: "+string(r.Kind))
		}
	}
	for _, m := range marks {
		if m.Turn < 1 || m.Turn > len(raws) || raws[m.Turn-1].mark != nil {
			return nil, divergence(m.Turn, "record malformed: "+string(m.Kind))
		}
		rt := raws[m.Turn-1]
		// A discard is only ever written for an unfinished turn, a refusal
		// only for a completed one.
		if (m.Kind == KindDiscarded && rt.term != nil) || (m.Kind == KindRefused && (rt.term == nil || rt.term.State != journal.StateCompleted)) {
			return nil, divergence(m.Turn, "record malformed: "+string(m.Kind))
		}
		mc := m
		rt.mark = &mc
	}
	return raws, nil
}

func turnNumber(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, turnPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// replay verifies every answered turn through the harness, in order, each
// with the history the replays before it rebuilt. The only model reachable
// is one that refuses and counts every call; a faithful history makes none.
func (c *Conversation) replay(ctx context.Context, turns []ChatTurn) ([]journal.HistoryMessage, int, error) {
	var history []journal.HistoryMessage
	answered := false
	for _, t := range turns {
		answered = answered || t.State == StateAnswered
	}
	if !answered {
		return nil, 0, nil
	}
	var resolved atomic.Int32
	emb, err := sessions.Start(ctx, sessions.Options{Journal: c.j, Resolve: func(string, route.Identity) (route.Model, error) {
		resolved.Add(1)
		return nil, errors.New("replay reaches no model")
	}})
	if err != nil {
		return nil, 0, fmt.Errorf("replay conversation %s: %w", c.id, err)
	}
	defer emb.Close()
	live := 0
	for i := range turns {
		t := &turns[i]
		if t.State != StateAnswered {
			continue
		}
		resp, err := emb.Client().VerifyTurn(ctx, &sessionspb.VerifyTurnRequest{SessionId: t.SessionID, Turn: 1, History: harness.HistoryToProto(history)})
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			return nil, 0, fmt.Errorf("replay turn %d: %w", t.N, err)
		}
		live += int(resp.GetLiveCalls())
		if !resp.GetVerified() {
			return nil, live, divergence(t.N, resp.GetReason())
		}
		t.Answer = resp.GetAnswer()
		history = append(history, journal.Exchange(t.Input, t.Answer)...)
	}
	live += int(resolved.Load())
	if live != 0 {
		return nil, live, divergence(0, fmt.Sprintf("the replay attempted %d model call(s)", live))
	}
	return history, live, nil
}
