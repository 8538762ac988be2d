package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// workTracker owns the cancel functions of work in flight: by progress
// token (window/workDoneProgress/cancel) and all of it (shutdown).
type workTracker struct {
	mu      sync.Mutex
	seq     int
	byToken map[string]context.CancelFunc
	all     map[int]context.CancelFunc
}

func newWorkTracker() *workTracker {
	return &workTracker{byToken: map[string]context.CancelFunc{}, all: map[int]context.CancelFunc{}}
}

// start registers cancel and returns an id for finish and a fresh token
// name for a server-created progress.
func (w *workTracker) start(cancel context.CancelFunc) (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	w.all[w.seq] = cancel
	return w.seq, fmt.Sprintf("kmx-work-%d", w.seq)
}

func (w *workTracker) bindToken(token json.RawMessage, cancel context.CancelFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.byToken[tokenKey(token)] = cancel
}

// tokenKey is a progress token in one canonical JSON spelling, so "7" and
// " 7" name the same token.
func tokenKey(token json.RawMessage) string {
	var v any
	if err := json.Unmarshal(token, &v); err != nil {
		return string(token)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(token)
	}
	return string(b)
}

func (w *workTracker) finish(id int, token json.RawMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.all, id)
	if token != nil {
		delete(w.byToken, tokenKey(token))
	}
}

func (w *workTracker) cancelToken(token json.RawMessage) bool {
	w.mu.Lock()
	cancel, ok := w.byToken[tokenKey(token)]
	w.mu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

func (w *workTracker) cancelAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, cancel := range w.all {
		cancel()
	}
}

// progress reports one piece of long work as $/progress: begin, reports,
// and exactly one end whose outcome is completed, failed or cancelled. With
// no token (the client supports no progress) every call is a no-op.
type progress struct {
	s     *Server
	ctx   context.Context
	token json.RawMessage
	once  sync.Once
}

type progressParams struct {
	Token json.RawMessage `json:"token"`
	Value ProgressValue   `json:"value"`
}

// beginProgress starts progress for work: with the client's workDoneToken
// when it sent one, else with a token the server creates (when the client
// said it supports window.workDoneProgress), else none. The token is bound
// to cancel so the progress UI's cancel button stops the work.
func (s *Server) beginProgress(ctx context.Context, clientToken json.RawMessage, name string, title string, cancel context.CancelFunc) *progress {
	p := &progress{s: s, ctx: context.WithoutCancel(ctx)}
	token := clientToken
	if len(token) == 0 || string(token) == "null" {
		if !s.capabilities().workDoneProgress {
			return p
		}
		created, _ := json.Marshal(name)
		_, err := s.conn.Call(p.ctx, "window/workDoneProgress/create", map[string]json.RawMessage{"token": created}, nil)
		if err != nil {
			s.log.Debug("progress not created", "err", err)
			return p
		}
		token = created
	}
	p.token = token
	s.work.bindToken(token, cancel)
	s.notify(p.ctx, "$/progress", &progressParams{Token: token, Value: ProgressValue{Kind: "begin", Title: title, Cancellable: true}})
	return p
}

func (p *progress) report(msg string, pct int) {
	if p.token == nil {
		return
	}
	p.s.notify(p.ctx, "$/progress", &progressParams{Token: p.token, Value: ProgressValue{Kind: "report", Message: msg, Percentage: &pct}})
}

// end closes the progress once; later calls are ignored.
func (p *progress) end(outcome, msg string) {
	p.once.Do(func() {
		if p.token == nil {
			return
		}
		p.s.notify(p.ctx, "$/progress", &progressParams{Token: p.token, Value: ProgressValue{Kind: "end", Outcome: outcome, Message: outcome + ": " + msg}})
	})
}

type workDoneProgressCancelParams struct {
	Token json.RawMessage `json:"token"`
}

// workDoneProgressCancel is the progress UI's cancel button: it cancels
// the work bound to the token, like $/cancelRequest does for the request.
func (s *Server) workDoneProgressCancel(_ context.Context, raw json.RawMessage) (any, error) {
	var p workDoneProgressCancelParams
	if err := decode("window/workDoneProgress/cancel", raw, &p); err != nil {
		return nil, nil
	}
	if !s.work.cancelToken(p.Token) {
		s.log.Debug("cancel for unknown progress token")
	}
	return nil, nil
}
