// Package conversation owns kmx's durable conversations: one conversation
// per agent file (its physical path) and conversation ID, held in its own
// private SQLite journal under <state>/local-preview/conversations, kept
// until cleared and never counted in run retention.
//
// Each turn is a fresh Session on the embedded Sessions service, placed
// under the durable name "turn:N" (its example ID) and journaled with the
// same five records as an example's turn. The instructions are the agent
// file's at the turn; the history is every earlier answered turn's input
// and answer. Opening a conversation replays every answered turn through
// the harness with zero model calls (counted) to rebuild that history; a
// turn is never sent twice.
//
// What must stay true, each checked by a named test in this package:
//
//  1. No second turn while one runs: Open holds the conversation's OS lock
//     (another holder, in this process or another, is refused: CodeBusy) and a
//     Conversation runs one Send at a time. Reading the history (History)
//     is not a turn: it takes no lock and reads a snapshot of the journal,
//     showing a turn in flight as StatePending.
//  2. A cancelled Send returns only after the model call in flight has been
//     torn down (the per-turn Sessions service is closed, which joins the
//     harness), and the conversation accepts fresh work afterwards.
//  3. A history whose last turn has no recorded outcome refuses Send before
//     anything is created or sent (CodeUnfinished), and never appends on
//     that refusal; DiscardUnfinished records the discard explicitly.
//  4. A conversation never continues on a different model identity or
//     route than its history records: refused before the turn, and after
//     it when the reply names another model (the turn is then recorded as
//     refused and kept out of the history); a history whose own turns name
//     two identities cannot be opened.
//  5. A history that does not replay (a tampered journal) cannot be opened.
//
// Turns are not test results: nothing here judges, and every result is
// labelled "local preview".
package conversation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
	"github.com/kmxdev/kmx/sidecar/internal/sessions"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// Label is on every conversation result: a turn is never a test result.
const Label = "local preview"

// DefaultID is the conversation a file gets when none is named.
const DefaultID = "default"

// MaxInput is the largest turn input, in bytes (as ad-hoc Run input).
const MaxInput = 16 << 10

// turnPrefix starts a turn's durable name, its session's example ID.
const turnPrefix = "turn:"

// Conversation-level records live under their own session ID, so Sessions
// never sees them among a turn's five records.
const (
	markSession = "conversation"
	// KindDiscarded records that the user discarded a turn whose outcome
	// was never recorded (its process was killed).
	KindDiscarded journal.Kind = "conversation.discarded"
	// KindRefused records that a completed turn's reply named another
	// model than the conversation's: it is kept out of the history.
	KindRefused journal.Kind = "conversation.refused"
)

// Mark is the payload of a conversation-level record.
type Mark struct {
	Turn   int    `json:"turn"`
	Reason string `json:"reason"`
}

// Turn states a history reports.
const (
	StateAnswered   = "answered"
	StateFailed     = "failed"
	StateCancelled  = "cancelled"
	StateUnfinished = "unfinished"
	StateDiscarded  = "discarded"
	StateRefused    = "refused"
)

// ChatTurn is one turn of the history, as the journal holds it.
type ChatTurn struct {
	N         int            `json:"turn"`
	Name      string         `json:"name"`
	SessionID string         `json:"sessionId"`
	State     string         `json:"state"`
	Model     route.Identity `json:"model"`
	Input     string         `json:"input,omitempty"`
	// Answer is set only for an answered turn, as its replay gave it.
	Answer string `json:"answer,omitempty"`
	// Error is the fixed text the journal recorded for a failed or
	// cancelled turn, or why a turn was discarded or refused.
	Error string `json:"error,omitempty"`
}

// Options name a conversation.
type Options struct {
	// StateDir is the kmx state root (required).
	StateDir string
	// File is the agent file; the conversation belongs to its physical
	// path (symlinks resolved).
	File string
	// ID is the conversation ID; empty is DefaultID.
	ID string
	// Version is the kmx version recorded when the journal is created.
	Version string
}

// Conversation is an open conversation: it holds the conversation's lock
// until Close.
type Conversation struct {
	j     *journal.Journal
	id    string
	path  string
	key   string
	agent string

	mu              sync.Mutex
	busy            bool
	turns           []ChatTurn
	identity        *route.Identity
	history         []journal.HistoryMessage
	replayLiveCalls int
}

// ValidID checks a conversation ID: 1 to 64 letters, digits, '.', '_' or '-'.
func ValidID(id string) error {
	if id == "" || len(id) > 64 {
		return refusef("use 1 to 64 letters, digits, '.', '_' or '-'", "conversation ID %q is empty or longer than 64 characters", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return refusef("use only letters, digits, '.', '_' or '-'", "conversation ID %q contains %q", id, c)
		}
	}
	return nil
}

// PhysicalPath is the absolute path of file with symlinks resolved: the
// identity a conversation belongs to.
func PhysicalPath(file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", file, err)
	}
	p, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", refusef("check the path of the agent file", "the agent file %s cannot be found", file)
	}
	return p, nil
}

// Key is the conversation key of a physical path and conversation ID: the
// name of its journal family in the conversations folder.
func Key(physicalPath, id string) string {
	h := sha256.Sum256([]byte(physicalPath + "\x00" + id))
	return "conv-" + hex.EncodeToString(h[:16])
}

// Open opens (creating if needed) the conversation, holding its lock, reads
// its history from the journal and replays every answered turn with zero
// model calls to rebuild it. It refuses a busy conversation (ErrBusy), a
// history that names two model identities (*IdentityError) and a history
// that does not replay (*DivergenceError). An unfinished last turn does not
// stop Open: it stops Send.
func Open(ctx context.Context, opts Options) (*Conversation, error) {
	c, err := open(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := c.load(ctx); err != nil {
		_ = c.j.Close()
		return nil, err
	}
	return c, nil
}

// location is the conversation's ID (the default when none is given) and
// the agent file's physical path: together they name its journal.
func (opts Options) location() (id, path string, err error) {
	id = opts.ID
	if id == "" {
		id = DefaultID
	}
	if err := ValidID(id); err != nil {
		return "", "", err
	}
	path, err = PhysicalPath(opts.File)
	if err != nil {
		return "", "", err
	}
	return id, path, nil
}

func open(ctx context.Context, opts Options) (*Conversation, error) {
	if opts.StateDir == "" {
		return nil, errors.New("open conversation: no state folder")
	}
	id, path, err := opts.location()
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, refusef("check the agent file can be read", "the agent file %s cannot be read", opts.File)
	}
	dir, err := journal.EnsureConversationsDir(opts.StateDir)
	if err != nil {
		return nil, unsafeRefusal(err)
	}
	version := opts.Version
	if version == "" {
		version = "0"
	}
	rev := sha256.Sum256(src)
	agent := agentID(path)
	key := Key(path, id)
	j, _, err := journal.OpenConversation(ctx, dir, key, journal.RunMeta{
		KmxVersion: version, AgentID: agent, AgentRevision: hex.EncodeToString(rev[:]), Command: "chat",
	})
	switch {
	case errors.Is(err, journal.ErrBusy):
		return nil, busy(id)
	case errors.Is(err, journal.ErrTampered):
		return nil, divergence(0, "journal tampered")
	case err != nil:
		return nil, unsafeRefusal(err)
	}
	return &Conversation{j: j, id: id, path: path, key: key, agent: agent}, nil
}

func agentID(path string) string {
	base := filepath.Base(path)
	if s, ok := strings.CutSuffix(base, ".agent.md"); ok && s != "" {
		return s
	}
	return base
}

// unsafeRefusal turns a state privacy error into a refusal that says what
// to change; any other error is returned as it is.
func unsafeRefusal(err error) error {
	var unsafe *state.UnsafeError
	if errors.As(err, &unsafe) {
		return &Refusal{Code: CodeInvalid, Msg: unsafe.Error(), Next: unsafe.NextStep()}
	}
	return err
}

// ID is the conversation ID.
func (c *Conversation) ID() string { return c.id }

// Path is the agent file's physical path.
func (c *Conversation) Path() string { return c.path }

// JournalPath is the conversation's journal file.
func (c *Conversation) JournalPath() string { return c.j.Path() }

// Turns returns the history, oldest first.
func (c *Conversation) Turns() []ChatTurn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ChatTurn(nil), c.turns...)
}

// Identity is the model identity the history records (nil before the first
// turn).
func (c *Conversation) Identity() *route.Identity {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.identity == nil {
		return nil
	}
	id := *c.identity
	return &id
}

// ReplayLiveCalls is the number of model calls the replays made when the
// history was rebuilt: each was refused, and a faithful history makes none.
func (c *Conversation) ReplayLiveCalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replayLiveCalls
}

// Unfinished returns the turn whose outcome the history does not hold, if
// any.
func (c *Conversation) Unfinished() *ChatTurn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unfinishedLocked()
}

func (c *Conversation) unfinishedLocked() *ChatTurn {
	if n := len(c.turns); n > 0 && c.turns[n-1].State == StateUnfinished {
		t := c.turns[n-1]
		return &t
	}
	return nil
}

// Close records the journal's head and releases the conversation's lock.
func (c *Conversation) Close() error {
	if err := c.j.Finish(context.Background(), journal.StatusFinished); err != nil {
		return fmt.Errorf("close conversation %s: %w", c.id, err)
	}
	return nil
}

// SendRequest is one new turn.
type SendRequest struct {
	// Instructions are the agent file's instructions now.
	Instructions string
	// Input is what the user says.
	Input string
	// Model is the route the turn is sent on; its identity must be the
	// history's.
	Model route.Model
	// Tools is the agent's tool set frozen for this turn (empty for a
	// file that declares none): the turn then runs on the
	// kmx-local-tools-v1 harness with the history, and is journaled and
	// replayed with its tool calls like an example's tool turn.
	Tools []localtools.Tool
}

// Send runs one new turn: it refuses (before anything is created or sent)
// while another Send runs, while the last turn is unfinished, or when the
// model's identity is not the history's; otherwise it sends the input with
// the rebuilt history as a fresh Session "turn:N" and journals it.
//
// When ctx is cancelled, Send returns only after the model call in flight
// has been torn down and the turn's cancelled outcome is journaled.
func (c *Conversation) Send(ctx context.Context, req SendRequest) (ChatTurn, error) {
	c.mu.Lock()
	if c.busy {
		c.mu.Unlock()
		return ChatTurn{}, busy(c.id)
	}
	if err := c.checkSendLocked(req); err != nil {
		c.mu.Unlock()
		return ChatTurn{}, err
	}
	c.busy = true
	n := len(c.turns) + 1
	history := append([]journal.HistoryMessage(nil), c.history...)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.busy = false
		c.mu.Unlock()
	}()

	t, err := c.runTurn(ctx, n, req, history)
	if t.SessionID == "" {
		return t, err
	}
	c.mu.Lock()
	if c.identity == nil {
		id := req.Model.Identity()
		c.identity = &id
	}
	c.turns = append(c.turns, t)
	if t.State == StateAnswered {
		c.history = append(c.history, journal.Exchange(t.Input, t.Answer)...)
	}
	c.mu.Unlock()
	return t, err
}

// checkSendLocked refuses a turn before anything is created or sent.
func (c *Conversation) checkSendLocked(req SendRequest) error {
	if u := c.unfinishedLocked(); u != nil {
		return unfinished(c.id, u.N)
	}
	if req.Model == nil {
		return errors.New("send: no model")
	}
	if got := req.Model.Identity(); c.identity != nil && got != *c.identity {
		return identityBefore(*c.identity, got)
	}
	return checkInput(req.Input)
}

func checkInput(input string) error {
	if len(input) > MaxInput {
		return refusef("shorten the message to at most 16 KiB", "the message is %d bytes; the limit is %d", len(input), MaxInput)
	}
	if strings.TrimSpace(input) == "" {
		return refusef("type a message to send", "the message is empty")
	}
	if f := secrets.Scan(input); len(f) > 0 {
		return refusef("remove the credential from the message; kmx never sends or journals credential-shaped text",
			"the message contains a credential-shaped value (%s) at byte %d", f[0].Shape, f[0].Start)
	}
	return nil
}

// runTurn sends turn n on a Sessions service of its own, closed before it
// returns: closing joins the harness, so a cancelled turn's model call has
// been torn down when runTurn returns.
func (c *Conversation) runTurn(ctx context.Context, n int, req SendRequest, history []journal.HistoryMessage) (ChatTurn, error) {
	want := req.Model.Identity()
	emb, err := sessions.Start(context.WithoutCancel(ctx), sessions.Options{Journal: c.j, Resolve: func(purpose string, id route.Identity) (route.Model, error) {
		if purpose == harness.PurposeAgent && id == want {
			return req.Model, nil
		}
		return nil, fmt.Errorf("no %s route for model %q on %q in this conversation", purpose, id.Model, id.Route)
	}})
	if err != nil {
		return ChatTurn{}, fmt.Errorf("send turn %d: %w", n, err)
	}
	closed := false
	defer func() {
		if !closed {
			emb.Close()
		}
	}()
	client := emb.Client()
	name := turnPrefix + strconv.Itoa(n)
	cs, err := client.CreateSession(ctx, &sessionspb.CreateSessionRequest{
		Purpose: harness.PurposeAgent, ExampleId: name,
		Model: &sessionspb.ModelIdentity{Route: want.Route, Model: want.Model},
		Tools: harness.ToolsToProto(req.Tools),
	})
	if err != nil {
		if ctx.Err() != nil {
			return ChatTurn{}, ctx.Err()
		}
		return ChatTurn{}, fmt.Errorf("send turn %d: place the session: %w", n, err)
	}
	resp, runErr := client.RunTurn(ctx, &sessionspb.RunTurnRequest{
		SessionId: cs.GetSessionId(), Instructions: req.Instructions, Input: req.Input, History: harness.HistoryToProto(history),
	})
	// Join the turn: the harness handler (and the model's teardown) and the
	// Sessions handler (and its terminal record) end before Close returns.
	emb.Close()
	closed = true

	t := ChatTurn{N: n, Name: name, SessionID: cs.GetSessionId(), Model: want, Input: req.Input}
	if runErr != nil {
		// The outcome is whatever the journal now holds for the session.
		st, err := c.sessionOutcome(context.WithoutCancel(ctx), cs.GetSessionId())
		if err != nil {
			return t, fmt.Errorf("send turn %d: %w", n, err)
		}
		t.State, t.Error = st.State, st.Error
		if ctx.Err() != nil {
			return t, ctx.Err()
		}
		return t, fmt.Errorf("send turn %d: %w", n, runErr)
	}
	switch resp.GetState() {
	case sessionspb.TurnState_TURN_STATE_COMPLETED:
		if resp.GetReportedModel() != want.Model {
			reason := fmt.Sprintf("the reply named model %q, not the conversation's %q", resp.GetReportedModel(), want.Model)
			if err := c.mark(context.WithoutCancel(ctx), KindRefused, n, reason); err != nil {
				return t, fmt.Errorf("send turn %d: %w", n, err)
			}
			t.State, t.Error = StateRefused, reason
			return t, identityReply(n, want, resp.GetReportedModel())
		}
		t.State, t.Answer = StateAnswered, resp.GetAnswer()
	case sessionspb.TurnState_TURN_STATE_CANCELLED:
		t.State, t.Error = StateCancelled, resp.GetError()
	default:
		t.State, t.Error = StateFailed, resp.GetError()
	}
	return t, nil
}

// sessionOutcome reads how a session's turn ended from the journal.
func (c *Conversation) sessionOutcome(ctx context.Context, sessionID string) (ChatTurn, error) {
	recs, err := c.j.Records(ctx, sessionID)
	if err != nil {
		return ChatTurn{}, fmt.Errorf("read the turn's records: %w", err)
	}
	t := ChatTurn{State: StateFailed, Error: errNeverStarted}
	for _, r := range recs {
		switch r.Kind {
		case journal.KindTurnStarted:
			if t.Error == errNeverStarted {
				t = ChatTurn{State: StateUnfinished}
			}
		case journal.KindTurnTerminal:
			var term journal.TurnTerminal
			if journal.Decode(r.Payload, &term) == nil {
				t.State, t.Error = terminalState(term.State), term.Error
			}
		}
	}
	return t, nil
}

func terminalState(s string) string {
	switch s {
	case journal.StateCompleted:
		return StateAnswered
	case journal.StateCancelled:
		return StateCancelled
	}
	return StateFailed
}

// DiscardUnfinished records that the unfinished last turn is discarded, so
// the conversation can continue without it. Its input is never re-sent.
func (c *Conversation) DiscardUnfinished(ctx context.Context) (ChatTurn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy {
		return ChatTurn{}, busy(c.id)
	}
	u := c.unfinishedLocked()
	if u == nil {
		return ChatTurn{}, refusef("nothing to discard: the conversation can continue", "conversation %q has no unfinished turn", c.id)
	}
	const reason = "discarded: the turn's outcome was never recorded (its process ended mid-turn)"
	if err := c.mark(ctx, KindDiscarded, u.N, reason); err != nil {
		return ChatTurn{}, fmt.Errorf("discard turn %d: %w", u.N, err)
	}
	t := &c.turns[len(c.turns)-1]
	t.State, t.Error = StateDiscarded, reason
	return *t, nil
}

func (c *Conversation) mark(ctx context.Context, kind journal.Kind, turn int, reason string) error {
	payload, err := journal.Encode(Mark{Turn: turn, Reason: reason})
	if err != nil {
		return err
	}
	_, err = c.j.Append(ctx, journal.Record{SessionID: markSession, Turn: turn, Kind: kind, Version: journal.SchemaVersion, Payload: payload})
	return err
}

// Clear removes the conversation's journal. A conversation whose lock is
// held elsewhere is kept (*BusyError). It reports whether there was one.
func Clear(opts Options) (bool, error) {
	id := opts.ID
	if id == "" {
		id = DefaultID
	}
	if err := ValidID(id); err != nil {
		return false, err
	}
	path, err := PhysicalPath(opts.File)
	if err != nil {
		return false, err
	}
	removed, err := journal.ClearConversation(journal.ConversationsDir(opts.StateDir), Key(path, id))
	if errors.Is(err, journal.ErrBusy) {
		return false, busy(id)
	}
	return removed, unsafeRefusal(err)
}
