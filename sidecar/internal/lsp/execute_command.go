package lsp

import (
	"context"
	"encoding/json"
	"fmt"

	"go.lsp.dev/jsonrpc2"
)

type executeCommandParams struct {
	Command       string            `json:"command"`
	Arguments     []json.RawMessage `json:"arguments"`
	WorkDoneToken json.RawMessage   `json:"workDoneToken,omitempty"`
}

// executeCommand serves the kmx.* commands. Each takes exactly one
// argument, the params of the custom method it shares a handler with, and
// answers that method's result.
func (s *Server) executeCommand(ctx context.Context, raw json.RawMessage) (any, error) {
	var p executeCommandParams
	if err := decode("workspace/executeCommand", raw, &p); err != nil {
		return nil, err
	}
	if _, ok := Commands()[p.Command]; !ok {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "workspace/executeCommand: unknown command %q; see docs/protocol.md", p.Command)
	}
	if len(p.Arguments) != 1 {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: takes exactly one argument (an object), got %d", p.Command, len(p.Arguments))
	}
	arg := p.Arguments[0]
	switch p.Command {
	case CommandRunExample, CommandRunWithInput:
		var a ExampleParams
		if err := decode(p.Command, arg, &a); err != nil {
			return nil, err
		}
		if p.Command == CommandRunWithInput && a.Input == nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: input is required", p.Command)
		}
		return s.runExample(ctx, a, p.WorkDoneToken)
	case CommandTestFile:
		var a TestParams
		if err := decode(p.Command, arg, &a); err != nil {
			return nil, err
		}
		return s.testFile(ctx, a, p.WorkDoneToken)
	case CommandExplain:
		var a ExplainParams
		if err := decode(p.Command, arg, &a); err != nil {
			return nil, err
		}
		return s.explainFile(a)
	case CommandListRuns:
		var a DocumentParams
		if err := decode(p.Command, arg, &a); err != nil {
			return nil, err
		}
		return s.listFileRuns(a)
	case CommandClearJournals:
		var a ClearJournalsParams
		if err := decode(p.Command, arg, &a); err != nil {
			return nil, err
		}
		return s.clearRuns(a)
	case CommandInspectRun:
		var a InspectParams
		if err := decode(p.Command, arg, &a); err != nil {
			return nil, err
		}
		return s.inspectRun(ctx, a)
	case CommandOpenChat:
		return s.chat(ctx, arg)
	}
	return nil, fmt.Errorf("%s: listed but not dispatched (a kmx bug)", p.Command)
}
