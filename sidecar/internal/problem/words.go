package problem

import (
	"errors"
	"strings"
)

// Setting is one thing a person sets to invoke kmx: a model, an endpoint,
// a selection. The engine's messages and next steps name settings through
// Words, so that each front says them in its own terms: the command line
// (and the language server, whose settings mirror its flags) by its flags,
// the MCP server by its tool arguments and its startup configuration. A
// Setting's value is the command line's flag name.
type Setting string

// The settings a message or next step may name.
const (
	Model         Setting = "model"
	Endpoint      Setting = "endpoint"
	KeyEnv        Setting = "key-env"
	JudgeEndpoint Setting = "judge-endpoint"
	JudgeKeyEnv   Setting = "judge-key-env"
	Input         Setting = "input"
	InputFile     Setting = "input-file"
	Example       Setting = "example"
	Trials        Setting = "trials"
	From          Setting = "from"
	Baseline      Setting = "baseline"
	Concurrency   Setting = "concurrency"
	Shard         Setting = "shard"
	ToolBindings  Setting = "tool-bindings"
	Conversation  Setting = "conversation"
	// Discard and Clear are kmx chat's ways to discard a conversation's
	// unfinished turn and to clear it.
	Discard Setting = "discard-unfinished"
	Clear   Setting = "clear"
	// Root is a folder kmx mcp may read (kmx mcp --root).
	Root Setting = "root"
	// Runs is the list of retained runs, as a command: on the command
	// line kmx journal list (with a value, --file VALUE: a file's runs).
	Runs Setting = "journal list"

	// Commands: on the command line a kmx command ("kmx test FILE"), in
	// another front the way it offers the same (MCP's Test tool), or ""
	// when it has none. A Setting starting "kmx " is a command.
	RunCmd   Setting = "kmx run"
	TestCmd  Setting = "kmx test"
	CheckCmd Setting = "kmx check"
	// ClearFailures clears a file's retained failure records (on the
	// command line kmx test explain --file FILE --clear).
	ClearFailures Setting = "kmx test explain --clear"
	// Call is the verb that invokes a command: "run" on the command line,
	// "call" for MCP's tools.
	Call Setting = "call"
)

// Words is how one front names a setting: Words(s, "") is the setting
// itself ("--model"), Words(s, v) the setting given the value v ("--model
// fake"). A front that has no such setting returns "", and a sentence that
// offers it as one way among others leaves that way out.
type Words func(s Setting, value string) string

// Flags are the command line's words: the flag, then its value; a
// command, then its arguments.
func Flags(s Setting, value string) string {
	switch {
	case s == Call:
		return "run"
	case s == ClearFailures:
		return "kmx test explain --file " + or(value, "FILE") + " --clear"
	case strings.HasPrefix(string(s), "kmx "):
		if value == "" {
			return string(s)
		}
		return string(s) + " " + value
	}
	if s == Runs {
		if value == "" {
			return "kmx journal list"
		}
		return "kmx journal list --file " + value
	}
	if value == "" {
		return "--" + string(s)
	}
	return "--" + string(s) + " " + value
}

func or(v, otherwise string) string {
	if v == "" {
		return otherwise
	}
	return v
}

// Invocation is cmd given settings, in w's words: on the command line the
// command and its flags ("kmx test FILE --trials N"), in a front without a
// command line its own way with its arguments ("Test with trials N"). Each
// of settings is already worded (w(Trials, "N")).
func Invocation(w Words, cmd Setting, value string, settings ...string) string {
	c := w(cmd, value)
	if len(settings) == 0 {
		return c
	}
	if strings.HasPrefix(c, "kmx ") {
		return c + " " + strings.Join(settings, " ")
	}
	return c + " with " + strings.Join(settings, " and ")
}

// CommandLine says whether w words settings as the command line's flags
// (the CLI and the language server, whose settings mirror them): a
// sentence that joins several settings joins flags with a space.
func CommandLine(w Words) bool { return strings.HasPrefix(w(Model, ""), "--") }

// Sentence is a message or a next step that names settings, said in the
// words of the front that shows it.
type Sentence func(w Words) string

// Worded is a Problem whose message and next step name settings: each
// front words them for itself. Error and NextStep are in Flags' words.
type Worded interface {
	Problem
	MessageIn(w Words) string
	NextStepIn(w Words) string
}

// NextStepIn is NextStep(err) in w's words: the first Problem of err's
// chain, its step worded by w when it is Worded.
func NextStepIn(err error, w Words) string {
	var p Problem
	if !errors.As(err, &p) {
		return ""
	}
	if wp, ok := p.(Worded); ok {
		return wp.NextStepIn(w)
	}
	return p.NextStep()
}

// MessageIn is Message(err) in w's words when err is itself Worded (a
// Worded problem inside a wrapping error keeps the wrapper's text).
func MessageIn(err error, w Words) string {
	if wp, ok := err.(Worded); ok {
		return rpcStatus.ReplaceAllString(wp.MessageIn(w), "")
	}
	return Message(err)
}

// Say is a Worded problem: msg and next in each front's words.
func Say(next, msg Sentence) error { return &worded{msg: msg, next: next} }

type worded struct{ msg, next Sentence }

func (p *worded) Error() string             { return p.msg(Flags) }
func (p *worded) NextStep() string          { return p.next(Flags) }
func (p *worded) MessageIn(w Words) string  { return p.msg(w) }
func (p *worded) NextStepIn(w Words) string { return p.next(w) }

// Plain is a Sentence that names no setting.
func Plain(s string) Sentence { return func(Words) string { return s } }
