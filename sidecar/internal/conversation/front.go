package conversation

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// Schema is the version of the JSON every front prints for a conversation.
// Within v1 fields are only added.
const Schema = "kmx.chat/v1"

// Request names the conversation a front acts on and the route settings a
// new turn uses (the same as Run's: model override, endpoint, key variable).
type Request struct {
	// File is the agent file, as the user gave it.
	File string
	// ID is the conversation ID; empty is DefaultID.
	ID string
	// Source, when set, is the file's text to take the instructions from
	// (the editor's buffer); nil reads the file.
	Source []byte
	// Route is what a turn is planned with (the invocation package's
	// options, never the runner's: a turn has no trials or re-grade): the
	// state folder (StateDir, else resolved through Getenv), the model
	// override, the endpoint settings and the editor's models.
	Route invocation.Options
}

// Transcript is what every front shows: the history (oldest first), the turn
// just sent, and the model the conversation is on.
type Transcript struct {
	Schema       string `json:"schema"`
	Label        string `json:"label"`
	File         string `json:"file"`
	Conversation string `json:"conversation"`
	JournalPath  string `json:"journalPath,omitempty"`
	// Model is the identity the history records (absent before a turn).
	Model *route.Identity `json:"model,omitempty"`
	// ReplayLiveCalls is the model calls the history's replay made: always
	// present, must be 0.
	ReplayLiveCalls int        `json:"replayLiveCalls"`
	Turns           []ChatTurn `json:"turns"`
	// Turn is the turn this request sent or discarded.
	Turn *ChatTurn `json:"turn,omitempty"`
	// Unfinished is the turn number that blocks new turns, if any.
	Unfinished int `json:"unfinished,omitempty"`
	// Pending is the turn number running now (in this window or another
	// process), if any: a history read while a turn runs shows it without
	// an outcome, and new turns are refused as busy until it ends.
	Pending int `json:"pending,omitempty"`
	// Cleared says whether a clear removed a conversation.
	Cleared *bool `json:"cleared,omitempty"`
}

func stateDir(opts invocation.Options) (string, error) {
	root, err := invocation.StateRoot(opts)
	if err != nil {
		return "", &Refusal{Code: CodeInvalid, Msg: err.Error(), Next: problem.SetKMXHome}
	}
	return root, nil
}

func (r Request) options() (Options, error) {
	root, err := stateDir(r.Route)
	if err != nil {
		return Options{}, err
	}
	return Options{StateDir: root, File: r.File, ID: r.ID, Version: r.Route.Version}, nil
}

func (c *Conversation) result(file string) *Transcript {
	res := &Transcript{Schema: Schema, Label: Label, File: file, Conversation: c.id, JournalPath: c.JournalPath(),
		Model: c.Identity(), ReplayLiveCalls: c.ReplayLiveCalls(), Turns: c.Turns()}
	if res.Turns == nil {
		res.Turns = []ChatTurn{}
	}
	if u := c.Unfinished(); u != nil {
		res.Unfinished = u.N
	}
	if n := len(res.Turns); n > 0 && res.Turns[n-1].State == StatePending {
		res.Pending = res.Turns[n-1].N
	}
	return res
}

// withOpen opens the conversation, runs fn and closes it, reporting a close
// error only when fn succeeded.
func withOpen(ctx context.Context, req Request, fn func(*Conversation) error) (*Transcript, error) {
	opts, err := req.options()
	if err != nil {
		return nil, err
	}
	c, err := Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	err = fn(c)
	res := c.result(req.File)
	if cerr := c.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return res, err
}

// Say sends one turn: the file and input are checked and the route decided
// before the conversation is opened (a refusal creates nothing), then the
// turn runs with the history. The result holds the history including the
// new turn, which is also in Turn. A turn that ran but did not answer
// (failed, cancelled, refused after the reply) is reported in Turn with an
// error.
func Say(ctx context.Context, req Request, input string) (*Transcript, error) {
	src := req.Source
	if src == nil {
		var err error
		if src, err = os.ReadFile(req.File); err != nil {
			return nil, refusef("check the path; kmx reads *.agent.md files", "cannot read %s", req.File)
		}
	}
	prep, err := invocation.PrepareChat(ctx, req.Route, req.File, src, input)
	if err != nil {
		if r, ok := invocation.AsRefusal(err); ok {
			return nil, &Refusal{Code: CodeInvalid, Msg: r.Msg, Next: r.Next}
		}
		return nil, err
	}
	var sent *ChatTurn
	res, err := withOpen(ctx, req, func(c *Conversation) error {
		t, err := c.Send(ctx, SendRequest{Instructions: prep.Instructions, Input: input, Model: prep.Model, Tools: prep.Tools})
		if t.SessionID != "" {
			sent = &t
		}
		if err == nil && t.State != StateAnswered {
			err = fmt.Errorf("turn %d %s: %s", t.N, t.State, t.Error)
		}
		return err
	})
	if res != nil {
		res.Turn = sent
	}
	return res, err
}

// History returns the conversation's history, rebuilt by replay with zero
// model calls from a snapshot of its journal. It takes no lock, so it is
// answered while a turn runs (in this process or another): the committed
// turns, and the running one as pending (Transcript.Pending). It never
// sends anything, and creates nothing for a conversation that does not
// exist yet.
func History(ctx context.Context, req Request) (*Transcript, error) {
	if res, err := notStarted(req); res != nil || err != nil {
		return res, err
	}
	opts, err := req.options()
	if err != nil {
		return nil, err
	}
	c, err := read(ctx, opts)
	if err != nil {
		return nil, err
	}
	if c == nil {
		// Cleared (or still being created) since notStarted looked.
		id, _, _ := opts.location()
		return &Transcript{Schema: Schema, Label: Label, File: req.File, Conversation: id, Turns: []ChatTurn{}}, nil
	}
	return c.result(req.File), nil
}

// notStarted returns an empty result when the conversation has no journal.
func notStarted(req Request) (*Transcript, error) {
	opts, err := req.options()
	if err != nil {
		return nil, err
	}
	id, path, err := opts.location()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(journal.ConversationsDir(opts.StateDir), Key(path, id))
	for _, name := range []string{base + ".db", base + ".lock"} {
		if _, err := os.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	return &Transcript{Schema: Schema, Label: Label, File: req.File, Conversation: id, Turns: []ChatTurn{}}, nil
}

// Discard records that the unfinished last turn is discarded.
func Discard(ctx context.Context, req Request) (*Transcript, error) {
	if res, err := notStarted(req); err != nil {
		return nil, err
	} else if res != nil {
		return res, refusef("nothing to discard: the conversation can continue", "conversation %q has no turns", res.Conversation)
	}
	var d *ChatTurn
	res, err := withOpen(ctx, req, func(c *Conversation) error {
		t, err := c.DiscardUnfinished(ctx)
		if err == nil {
			d = &t
		}
		return err
	})
	if res != nil {
		res.Turn = d
	}
	return res, err
}

// ClearConversation removes the conversation's journal (refused while a
// turn runs).
func ClearConversation(req Request) (*Transcript, error) {
	opts, err := req.options()
	if err != nil {
		return nil, err
	}
	id := req.ID
	if id == "" {
		id = DefaultID
	}
	removed, err := Clear(opts)
	if err != nil {
		return nil, err
	}
	return &Transcript{Schema: Schema, Label: Label, File: req.File, Conversation: id, Turns: []ChatTurn{}, Cleared: &removed}, nil
}

// IsCancelled reports whether err is the caller's cancellation.
func IsCancelled(err error) bool { return errors.Is(err, context.Canceled) }
