package lsp

import (
	"context"
	"encoding/json"
)

// initialized is the client's acknowledgement; nothing to do.
func (s *Server) initialized(context.Context, json.RawMessage) (any, error) { return nil, nil }

// shutdown stops accepting work: every later request but exit is refused
// with InvalidRequest. Work still running is cancelled.
func (s *Server) shutdown(context.Context, json.RawMessage) (any, error) {
	s.end()
	s.work.cancelAll()
	s.log.Info("shutdown")
	return nil, nil
}

// exit ends Serve: exit code 0 after shutdown, 1 otherwise.
func (s *Server) exit(context.Context, json.RawMessage) (any, error) {
	code := ExitNoShut
	if s.currentState() == stateShutdown {
		code = ExitOK
	}
	s.log.Info("exit", "code", code)
	select {
	case s.exited <- code:
	default:
	}
	return nil, nil
}

// setTrace is accepted and ignored: the log goes to stderr whatever the
// trace level.
func (s *Server) setTrace(context.Context, json.RawMessage) (any, error) { return nil, nil }
