package route

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// ConfigError is a compatible route kmx refused to build: an endpoint, a
// credential variable or a model name that breaks the route rules. It is
// returned before any request is sent or any journal exists. Msg says what is
// wrong and Next what to change; neither ever holds a credential value or the
// endpoint text (which could carry one).
type ConfigError struct {
	// Field names what was refused: "endpoint", "key-env", "model" or
	// "tools".
	Field string
	Msg   string
	Next  string
	// Step, when set, is Next in each front's words (Next is its command
	// line wording).
	Step problem.Sentence `json:"-"`
}

func (e *ConfigError) Error() string {
	if e.Next == "" {
		return "compatible route: " + e.Msg
	}
	return "compatible route: " + e.Msg + ": " + e.Next
}

// NextStep is what to change (problem.Problem).
func (e *ConfigError) NextStep() string { return e.Next }

func configErr(field, msg, next string) *ConfigError {
	return &ConfigError{Field: field, Msg: msg, Next: next}
}

// configErrIn is configErr with a next step that names settings.
func configErrIn(field, msg string, next problem.Sentence) *ConfigError {
	return &ConfigError{Field: field, Msg: msg, Next: next(problem.Flags), Step: next}
}

// noModelNext and fakeWithEndpointNext are the next steps of a model name
// an endpoint cannot take.
func noModelNext(w problem.Words) string {
	return "set model: in the agent file or pass " + w(problem.Model, "") + " with the model name the endpoint serves"
}

func fakeWithEndpointNext(w problem.Words) string {
	return "drop " + w(problem.Endpoint, "") + " to use the fake model, or choose a model the endpoint serves"
}

// ReplyClass names the class of problem that made kmx refuse a request or a
// reply. The classes are stable (docs/routes.md lists them); error text is
// built from the class alone, never from the request or reply.
type ReplyClass string

// Reply and request refusal classes.
const (
	// ClassRequestTooLarge: the request body would exceed 1 MiB; nothing was sent.
	ClassRequestTooLarge ReplyClass = "request-too-large"
	// ClassRequestCredential: the request's model name or a message holds the
	// route's own credential; nothing was sent.
	ClassRequestCredential ReplyClass = "request-credential"
	// ClassTransport: the request did not complete (connection, TLS, or an
	// interrupted reply body).
	ClassTransport ReplyClass = "transport"
	// ClassRedirect: the endpoint answered with a 3xx; redirects are not followed.
	ClassRedirect ReplyClass = "redirect"
	// ClassStatus: the endpoint answered with a status other than 200.
	ClassStatus ReplyClass = "status"
	// ClassOversized: the reply body is over 1 MiB.
	ClassOversized ReplyClass = "oversized"
	// ClassMalformed: the body is not one complete JSON object in UTF-8
	// (truncated, invalid, not an object, or nested too deeply).
	ClassMalformed ReplyClass = "malformed"
	// ClassTrailingData: something follows the JSON object.
	ClassTrailingData ReplyClass = "trailing-data"
	// ClassDuplicateKey: an object repeats a key, exactly or as a
	// case-insensitive alias, at any depth.
	ClassDuplicateKey ReplyClass = "duplicate-key"
	// ClassToolCall: the reply carries a tool or function call where none
	// may be: on the tool-free path (any key spelling, or finish_reason
	// tool_calls/function_call), or on the tool path in any form but the
	// first choice's message.tool_calls.
	ClassToolCall ReplyClass = "tool-call"
	// ClassToolRound: the reply to the send after the tool results requests
	// tools again; the final response must be text.
	ClassToolRound ReplyClass = "tool-round"
	// ClassToolBatch: the tool call batch is malformed: not a list, over
	// five calls, a call that is not {id, type "function", function
	// {name, arguments}}, a missing or repeated call ID, or finish_reason
	// tool_calls with no call.
	ClassToolBatch ReplyClass = "tool-batch"
	// ClassToolName: a call names a tool the request did not offer.
	ClassToolName ReplyClass = "tool-name"
	// ClassToolArguments: a call's arguments are not a string holding one
	// JSON object, or repeat a key in it (exactly or as an alias).
	ClassToolArguments ReplyClass = "tool-arguments"
	// ClassErrorObject: the reply (status 200) carries a top-level error
	// object, with or without an answer beside it.
	ClassErrorObject ReplyClass = "error-object"
	// ClassRefusal: the reply carries a non-empty refusal.
	ClassRefusal ReplyClass = "refusal"
	// ClassTruncated: finish_reason is "length": the answer was cut off.
	ClassTruncated ReplyClass = "truncated"
	// ClassContentFilter: finish_reason is "content_filter".
	ClassContentFilter ReplyClass = "content-filter"
	// ClassFinishReason: finish_reason is missing, not a string, or any other
	// value than "stop".
	ClassFinishReason ReplyClass = "finish-reason"
	// ClassChoices: the reply has zero choices or more than one.
	ClassChoices ReplyClass = "choices"
	// ClassContent: the message content is missing, not a string, or empty.
	ClassContent ReplyClass = "content"
	// ClassModel: the reply's model is missing, empty, not a string, or not
	// exactly the model requested.
	ClassModel ReplyClass = "model"
	// ClassCredential: the reply holds the route's exact credential (raw,
	// JSON-escaped or in the decoded answer).
	ClassCredential ReplyClass = "credential"
)

// text is the fixed explanation of each class. Only these strings, the HTTP
// status code and kmx's own wording ever reach an error message.
func (c ReplyClass) text() string {
	switch c {
	case ClassRequestTooLarge:
		return "the request body would be over 1 MiB, so it was not sent; shorten the instructions or the input"
	case ClassRequestCredential:
		return "the request holds the endpoint credential, so it was not sent; remove it from the model name, instructions and input"
	case ClassTransport:
		return "the request to the endpoint did not complete"
	case ClassRedirect:
		return "the endpoint answered with a redirect, which kmx does not follow; set the endpoint to the final address"
	case ClassStatus:
		return "the endpoint answered with a status other than 200"
	case ClassOversized:
		return "the reply body is over 1 MiB"
	case ClassMalformed:
		return "the reply body is not one complete JSON object"
	case ClassTrailingData:
		return "the reply body has data after its JSON object"
	case ClassDuplicateKey:
		return "the reply repeats a key in one object (exactly or as a case-insensitive alias)"
	case ClassToolCall:
		return "the reply carries a tool call where none may be (no tools were offered, or the call is not in the first choice's message)"
	case ClassToolRound:
		return "the reply to the send after the tool results requests tools again; the final response must be text"
	case ClassToolBatch:
		return "the reply's tool call batch is malformed"
	case ClassToolName:
		return "the reply calls a tool that was not offered"
	case ClassToolArguments:
		return "the reply's tool call arguments are not a string holding one JSON object"
	case ClassErrorObject:
		return "the endpoint answered 200 but its reply carries an error object, so it is not a clean answer"
	case ClassRefusal:
		return "the model refused to answer"
	case ClassTruncated:
		return "the answer was cut off (finish_reason length)"
	case ClassContentFilter:
		return "the answer was withheld by a content filter (finish_reason content_filter)"
	case ClassFinishReason:
		return `the reply's finish_reason is missing or is not "stop"`
	case ClassChoices:
		return "the reply does not have exactly one choice"
	case ClassContent:
		return "the reply's message content is missing, not a string, or empty"
	case ClassModel:
		return "the reply does not name exactly the model that was requested"
	case ClassCredential:
		return "the reply contains the endpoint credential, so it was discarded before anything recorded it"
	}
	return "the reply was refused"
}

// ReplyError is a request kmx would not send or a reply it refused. The
// example that asked is unknown, never a pass. Its text holds the class
// explanation and, for status and redirect, the numeric HTTP status; never a
// body, prompt, answer, header or credential.
type ReplyError struct {
	Class ReplyClass
	// Status is the HTTP status code for ClassStatus and ClassRedirect, else 0.
	Status int
	// Detail is a kmx-written refinement (for example "truncated" for a body
	// that ends early). Only ClassModel's names what the reply holds: the
	// model it named, which is an identity, not content, and is shown only
	// when it is a short plain name (see wrongModelDetail) that the raw
	// credential check already passed.
	Detail string
	// err is the underlying transport or context error, for errors.Is
	// (context.Canceled, context.DeadlineExceeded). Its text is not shown
	// unless it was checked to hold no credential.
	err error
}

func (e *ReplyError) Error() string {
	msg := "compatible route: " + e.Class.text()
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d %s)", e.Status, http.StatusText(e.Status))
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap exposes a context or transport cause so callers can tell a
// cancellation or a deadline from a refusal.
func (e *ReplyError) Unwrap() error { return e.err }

// plainModelName is the shape of a model name kmx shows: letters, digits
// and the punctuation model names use, at most 128 bytes. Anything else in
// a reply's model field is described, never shown.
var plainModelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._:/@+()-]{0,127}$`)

// wrongModelDetail says which model a refused reply named instead of the
// one asked for, naming the model setting in w's words,
// one requested, so a user can pass the right --model: the model name is
// an identity, not content. It is shown only when it is a short plain name;
// the reply passed the raw credential check before it was decoded.
func wrongModelDetail(body []byte, want string, w problem.Words) string {
	// By its exact key, as DecodeReply reads it (a struct field would
	// also match "Model").
	var env map[string]json.RawMessage
	var raw json.RawMessage
	ok := false
	if json.Unmarshal(body, &env) == nil {
		raw, ok = env["model"]
	}
	if !ok {
		return fmt.Sprintf("it named no model (kmx asked for %q)", want)
	}
	var got string
	if json.Unmarshal(raw, &got) != nil {
		return fmt.Sprintf("its model is not a string (kmx asked for %q)", want)
	}
	switch {
	case got == "":
		return fmt.Sprintf("it named an empty model (kmx asked for %q)", want)
	case !plainModelName.MatchString(got):
		return fmt.Sprintf("it named a model that is not a plain name, so kmx does not show it (kmx asked for %q)", want)
	}
	return fmt.Sprintf("it named %q, but kmx asked for %q; pass %s if that is the model you meant", got, want, w(problem.Model, strconv.Quote(got)))
}

func replyErr(class ReplyClass, detail string) *ReplyError {
	return &ReplyError{Class: class, Detail: detail}
}
