package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/jsonrpc2"
)

type executeCommandParams struct {
	Command       string            `json:"command"`
	Arguments     []json.RawMessage `json:"arguments"`
	WorkDoneToken json.RawMessage   `json:"workDoneToken,omitempty"`
}

// commandFunc serves one kmx.* command: its one argument, and the
// work-done token of the request.
type commandFunc func(ctx context.Context, arg, token json.RawMessage) (any, error)

// command adapts a handler taking the typed params of the custom method a
// command shares to a commandFunc: it only decodes.
func command[P any](name string, fn func(ctx context.Context, p P, token json.RawMessage) (any, error)) commandFunc {
	return func(ctx context.Context, arg, token json.RawMessage) (any, error) {
		var p P
		if err := decode(name, arg, &p); err != nil {
			return nil, err
		}
		return fn(ctx, p, token)
	}
}

// commands is the one table of kmx.* commands (names from the generated
// contract, Commands()). Each takes exactly one argument, the params of the
// custom method it shares a handler with, and answers that method's
// result. TestEveryCommandIsDispatched keeps it equal to Commands().
func (s *Server) commands() map[string]commandFunc {
	return map[string]commandFunc{
		CommandRunExample: command(CommandRunExample, s.runExample),
		CommandRunWithInput: command(CommandRunWithInput, func(ctx context.Context, p ExampleParams, token json.RawMessage) (any, error) {
			if p.Input == nil {
				return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: input is required", CommandRunWithInput)
			}
			return s.runExample(ctx, p, token)
		}),
		CommandTestFile: command(CommandTestFile, s.testFile),
		CommandRegradeLastRun: command(CommandRegradeLastRun, func(ctx context.Context, p TestParams, token json.RawMessage) (any, error) {
			if p.FromRun == "" {
				return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: fromRun is required (the Re-grade last run lens names the run); to test afresh use %s", CommandRegradeLastRun, CommandTestFile)
			}
			return s.testFile(ctx, p, token)
		}),
		CommandCompareRuns: command(CommandCompareRuns, func(ctx context.Context, p DiffRunsParams, _ json.RawMessage) (any, error) {
			return s.compareRuns(ctx, p)
		}),
		CommandExplain: command(CommandExplain, func(_ context.Context, p ExplainParams, _ json.RawMessage) (any, error) {
			return s.explainFile(p)
		}),
		CommandListRuns: command(CommandListRuns, func(_ context.Context, p DocumentParams, _ json.RawMessage) (any, error) {
			return s.listFileRuns(p)
		}),
		CommandClearJournals: command(CommandClearJournals, func(_ context.Context, p ClearJournalsParams, _ json.RawMessage) (any, error) {
			return s.clearRuns(p)
		}),
		CommandInspectRun: command(CommandInspectRun, func(ctx context.Context, p InspectParams, _ json.RawMessage) (any, error) {
			return s.inspectRun(ctx, p)
		}),
		// kmx.openChat takes kmx/chat's params as they are.
		CommandOpenChat: func(ctx context.Context, arg, _ json.RawMessage) (any, error) {
			return s.chat(ctx, arg)
		},
	}
}

// executeCommand serves workspace/executeCommand from the command table.
func (s *Server) executeCommand(ctx context.Context, raw json.RawMessage) (any, error) {
	var p executeCommandParams
	if err := decode("workspace/executeCommand", raw, &p); err != nil {
		return nil, err
	}
	fn, ok := s.commands()[p.Command]
	if !ok {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "workspace/executeCommand: unknown command %q; see docs/protocol.md", p.Command)
	}
	if len(p.Arguments) != 1 {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: takes exactly one argument (an object), got %d", p.Command, len(p.Arguments))
	}
	return fn(ctx, p.Arguments[0], p.WorkDoneToken)
}
