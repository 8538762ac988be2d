package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// SchemaVersion is the version of the record payloads below. A reader refuses
// a record with any other version rather than reinterpret it.
const SchemaVersion = 1

// Kind names one of the five records of a chat turn.
type Kind string

// The five records a chat turn writes, in order.
const (
	KindSessionPlaced   Kind = "session.placed"
	KindTurnStarted     Kind = "turn.started"
	KindModelRequest    Kind = "model.request"
	KindModelCompletion Kind = "model.completion"
	KindTurnTerminal    Kind = "turn.terminal"
)

// The records a kmx-local-tools-v1 turn adds between its first model
// completion and its second model request: one call and one result per
// tool call of the batch, in batch order.
const (
	KindToolCall   Kind = "tool.call"
	KindToolResult Kind = "tool.result"
)

// KindWorkspaceOutcome is a kmx-workspace-tools-v1 turn's last record before
// its turn.terminal: what changed in the example's scratch copy and the
// final state of the files its assertions name.
const KindWorkspaceOutcome Kind = "workspace.outcome"

// PlacedWorkspace is the fixture a kmx-workspace-tools-v1 session works on:
// the folder as the agent file names it and its content hash (never the
// scratch copy, which is gone once the run ends).
type PlacedWorkspace struct {
	Fixture string `json:"fixture"`
	Hash    string `json:"hash"`
}

// WorkspaceOutcome is the payload of workspace.outcome. Outcome is the
// JSON of package workspace's Outcome, kept as written so that the file
// assertions are judged from the journal alone (no fixture, no copy).
type WorkspaceOutcome struct {
	Turn    int             `json:"turn"`
	Outcome json.RawMessage `json:"outcome"`
}

// TurnKinds lists the five kinds in the order a complete turn holds them.
var TurnKinds = [...]Kind{KindSessionPlaced, KindTurnStarted, KindModelRequest, KindModelCompletion, KindTurnTerminal}

// ModelIdentity is the exact route and model a session sends to.
type ModelIdentity struct {
	Route string `json:"route"`
	Model string `json:"model"`
}

// SessionPlaced is written when a Session is placed on a harness.
type SessionPlaced struct {
	SessionID string `json:"sessionId"`
	Harness   string `json:"harness"`
	// Purpose is "agent" or "judge".
	Purpose   string        `json:"purpose"`
	ExampleID string        `json:"exampleId"`
	Model     ModelIdentity `json:"model"`
	// Tools is the tool set offered to a kmx-local-tools-v1 session, frozen
	// at run start: each declared name with its kmx.yaml state, its source
	// and the example's saved calls. Absent on the chat harness.
	Tools []OfferedTool `json:"tools,omitempty"`
	// Workspace is the fixture a kmx-workspace-tools-v1 session works on.
	Workspace *PlacedWorkspace `json:"workspace,omitempty"`
}

// OfferedTool is one declared tool as offered to one example's turn:
// frozen at run start, journaled with the session, and all that replay
// needs. It is the one Go shape of a tool (localtools.Tool names it): the
// protocol's sessionspb.ToolSpec is converted to and from it only where a
// turn crosses the Sessions service or the harness. It is journaled as it
// is, so a change to it is a change to the journal's records.
type OfferedTool struct {
	Name string `json:"name"`
	// State is Enabled or Disabled, from kmx.yaml.
	State string `json:"state"`
	// Source is what answers a call: disabled, recorded, unavailable or live.
	Source string `json:"source"`
	// Recorded holds the example's saved calls (Source recorded).
	Recorded []RecordedCall `json:"recorded,omitempty"`
	// Pending marks a `calls: []` recording waiting for its first capture.
	Pending bool `json:"pending,omitempty"`
	// Function is the name the model is offered the tool under, when it
	// differs from Name (`edit_editFiles` for `edit/editFiles`): every
	// route's function names match ^[A-Za-z0-9_-]{1,64}$.
	Function string `json:"function,omitempty"`
	// Reference is the declared reference that brought the tool in, when
	// it differs from Name (the set `edit` for `edit/editFiles`, the legacy
	// `codebase` for `search/codebase`): kmx.yaml states and recordings
	// are keyed by it.
	Reference string `json:"reference,omitempty"`
	// Description and Parameters (a JSON schema) are the definition
	// offered for a tool of VS Code's reference table (Table names its
	// version) or an MCP stub; empty for any other name, which gets kmx's
	// generic definition, so older journals read as before.
	Description string `json:"description,omitempty"`
	Parameters  string `json:"parameters,omitempty"`
	Table       string `json:"table,omitempty"`
}

// FunctionName is the name the model calls the tool by.
func (t OfferedTool) FunctionName() string {
	if t.Function != "" {
		return t.Function
	}
	return t.Name
}

// Declared is the reference the agent file declares the tool by.
func (t OfferedTool) Declared() string {
	if t.Reference != "" {
		return t.Reference
	}
	return t.Name
}

// RecordedCall is one saved call of an offered tool: arguments and result
// as JSON text.
type RecordedCall struct {
	Arguments string `json:"arguments"`
	Result    string `json:"result"`
}

// ToolCallRequest is one call of a model's tool batch.
type ToolCallRequest struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCall is written before a validated call is answered.
type ToolCall struct {
	Turn int `json:"turn"`
	// Index is the call's place in the batch, from 1.
	Index     int    `json:"index"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolResult is what a call got: the text the model receives and its
// source (live, recorded, unavailable or disabled). Dispatched is false for
// a Disabled answer, which is not counted in toolCalls.
type ToolResult struct {
	Turn       int    `json:"turn"`
	Index      int    `json:"index"`
	ID         string `json:"id"`
	Name       string `json:"name"`
	Source     string `json:"source"`
	Dispatched bool   `json:"dispatched"`
	Result     string `json:"result"`
}

// TurnStarted is written before the harness runs a turn.
type TurnStarted struct {
	Turn         int           `json:"turn"`
	Instructions string        `json:"instructions"`
	Input        string        `json:"input"`
	Model        ModelIdentity `json:"model"`
	// History is the conversation a turn of a multi-turn example was sent
	// with (the earlier turns' inputs and answers, oldest first), between
	// the instructions and the input; replay sends it again, so the turn
	// verifies on its own. Absent for a one-turn example and for a `kmx
	// chat` turn, whose history is its conversation's earlier turns.
	History []HistoryMessage `json:"history,omitempty"`
}

// HistoryMessage is one earlier message of a turn's history: the one Go
// shape of a history message, from the runner's multi-turn loop and a
// conversation through Sessions and the harness to this record. It is
// converted to protobuf only where a turn crosses the Sessions or harness
// listener (harness.HistoryToProto, HistoryFromProto), and to the model
// request's route.Message where the harness builds that request.
type HistoryMessage struct {
	// Role is RoleUser or RoleAssistant.
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Roles of a history message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Exchange is one answered turn as history: its input, then its answer.
func Exchange(input, answer string) []HistoryMessage {
	return []HistoryMessage{{Role: RoleUser, Content: input}, {Role: RoleAssistant, Content: answer}}
}

// ModelRequest is written when the harness sends a model request. It keeps
// the request's digest, not a second copy of instructions and input: replay
// rebuilds the request from TurnStarted and must arrive at the same digest.
type ModelRequest struct {
	Turn   int    `json:"turn"`
	Model  string `json:"model"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
	// Send numbers a tool turn's model sends (1 or 2); absent on chat.
	Send int `json:"send,omitempty"`
}

// ModelCompletion is the checked reply of the model.
type ModelCompletion struct {
	Turn         int    `json:"turn"`
	Model        string `json:"model"`
	Text         string `json:"text"`
	FinishReason string `json:"finishReason"`
	// Send numbers a tool turn's model sends (1 or 2); absent on chat.
	Send int `json:"send,omitempty"`
	// ToolCalls is the batch a tool turn's first completion requested.
	ToolCalls []ToolCallRequest `json:"toolCalls,omitempty"`
	// Usage is the token usage the route reported for this send; absent
	// when it reported none.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is a model send's token usage as the route reported it.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
}

// Turn states recorded by TurnTerminal.
const (
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateCancelled = "cancelled"
)

// TurnTerminal ends a turn: its answer, or the fixed-text error that stopped it.
type TurnTerminal struct {
	Turn   int    `json:"turn"`
	State  string `json:"state"`
	Answer string `json:"answer,omitempty"`
	Error  string `json:"error,omitempty"`
	// DurationUs is the turn's duration in microseconds, from the
	// Sessions service starting it to its terminal (model sends and tool
	// calls; not judging): what maxLatencyMs is judged against. Absent in
	// journals written before it was recorded.
	DurationUs int `json:"durationUs,omitempty"`
}

// Encode marshals a payload for Append. The records a turn writes take a
// path without reflection that writes the same bytes (see encodeFast).
func Encode(v any) ([]byte, error) {
	if b, ok := encodeFast(v); ok {
		return b, nil
	}
	return encodeJSON(v)
}

// encodeJSON is Encode with encoding/json alone.
func encodeJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode journal record: %w", err)
	}
	return b, nil
}

// Decode unmarshals a payload strictly: unknown fields are refused, so a
// newer writer's record is never silently reinterpreted. The payloads a
// turn reads back, in the form Encode writes them, take a path without
// reflection that decodes them to the same values (see decodeFast).
func Decode(data []byte, v any) error {
	if decodeFast(data, v) {
		return nil
	}
	return decodeJSON(data, v)
}

// decodeJSON is Decode with encoding/json alone.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode journal record: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("decode journal record: trailing data")
	}
	return nil
}
