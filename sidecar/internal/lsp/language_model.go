package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// editorHost is the editor route's host: the server's connection to the
// extension, which answers kmx/languageModel/* through vscode.lm. Tokens
// stay in VS Code; the server sees model metadata, prompts and answers
// only.
type editorHost struct {
	s *Server
}

var _ route.EditorHost = editorHost{}

// editorHost returns the host when the client serves the editor route,
// else nil (the runner then refuses a non-fake model with no endpoint).
func (s *Server) editorHost() route.EditorHost {
	if !s.capabilities().languageModels {
		return nil
	}
	return editorHost{s: s}
}

// Models asks the client for the chat models VS Code offers.
func (h editorHost) Models(ctx context.Context) ([]route.EditorModelInfo, error) {
	var res route.EditorModelsResult
	if err := h.call(ctx, MethodLanguageModels, route.EditorModelsParams{}, &res); err != nil {
		return nil, err
	}
	return res.Models, nil
}

// Send sends one request to the client and returns its answer. A refusal
// by the client becomes an *route.EditorError of the class it named; an
// error without a known class is malformed. The client's message text is
// never used: it could quote the provider.
func (h editorHost) Send(ctx context.Context, p route.EditorSendParams) (route.EditorSendResult, error) {
	var res route.EditorSendResult
	err := h.call(ctx, MethodLanguageModelSend, p, &res)
	return res, err
}

// Tools asks the client for the tools VS Code offers (vscode.lm.tools).
func (h editorHost) Tools(ctx context.Context) ([]route.EditorToolInfo, error) {
	var res route.EditorToolsResult
	if err := h.call(ctx, MethodLanguageModelTools, route.EditorToolsParams{}, &res); err != nil {
		return nil, err
	}
	return res.Tools, nil
}

// InvokeTool asks the client to call one bound tool through
// vscode.lm.invokeTool. Errors as Send.
func (h editorHost) InvokeTool(ctx context.Context, p route.EditorInvokeToolParams) (route.EditorInvokeToolResult, error) {
	var res route.EditorInvokeToolResult
	err := h.call(ctx, MethodLanguageModelInvokeTool, p, &res)
	return res, err
}

// call sends one server → client request. When ctx ends first it sends
// $/cancelRequest for it (the client's cancellation token fires) and
// returns ctx's error; jsonrpc2's Call only stops waiting.
func (h editorHost) call(ctx context.Context, method string, params, result any) error {
	id, err := h.s.conn.Call(ctx, method, params, result)
	if ctx.Err() != nil {
		// &id: jsonrpc2.ID marshals through a pointer receiver; a value
		// would be sent as {} and cancel nothing.
		h.s.notify(ctx, "$/cancelRequest", map[string]any{"id": &id})
		return route.NewEditorError(route.EditorCancelled, ctx.Err())
	}
	if err == nil {
		return nil
	}
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) && rpcErr.Data != nil {
		var data route.EditorErrorData
		if json.Unmarshal(*rpcErr.Data, &data) == nil && route.KnownEditorClass(data.Class) {
			return route.NewEditorError(data.Class, nil)
		}
	}
	h.s.log.Warn("editor request failed without a known class", "method", method, "type", fmt.Sprintf("%T", err))
	return route.NewEditorError(route.EditorMalformed, nil)
}
