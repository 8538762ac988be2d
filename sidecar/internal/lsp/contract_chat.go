package lsp

import "github.com/kmxdev/kmx/sidecar/internal/conversation"

// The chat panel's part of the contract (docs/conversations.md): one durable
// conversation per agent file and conversation ID, held by the sidecar.

// ChatParams names a conversation and, with Input, sends one turn.
type ChatParams struct {
	// URI is the agent file's document URI; it must be a file on disk (the
	// conversation belongs to its physical path). The open buffer's text
	// gives the instructions.
	URI string `json:"uri"`
	// Conversation is the conversation ID; empty is "default".
	Conversation string `json:"conversation,omitempty"`
	// Input is the message to send; absent reads the history, replayed
	// from the journal with zero model calls.
	Input *string `json:"input,omitempty"`
	// Model overrides the model for this turn (the editor's picker); it
	// must be the conversation's once it has turns.
	Model string `json:"model,omitempty"`
}

// ChatRefusal is a conversation operation kmx refused: nothing was sent.
// Code is what the panel acts on: "unfinished" offers Discard.
type ChatRefusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Next    string `json:"next"`
	Turn    int    `json:"turn,omitempty"`
}

// ChatResult is the conversation after the request (kmx.chat/v1), with a
// refusal or the error of a turn that ran but did not answer. Refusals are
// results, not JSON-RPC errors, as for runs.
type ChatResult struct {
	ProtocolVersion string                   `json:"protocolVersion"`
	URI             string                   `json:"uri"`
	Chat            *conversation.Transcript `json:"chat,omitempty"`
	Refusal         *ChatRefusal             `json:"refusal,omitempty"`
	// Error is why the turn sent did not answer (failed, cancelled).
	Error string `json:"error,omitempty"`
}
