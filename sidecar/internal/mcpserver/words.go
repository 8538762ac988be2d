package mcpserver

import (
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// argumentOf is the tool argument of each setting a call can give.
var argumentOf = map[problem.Setting]string{
	problem.Model:        "model",
	problem.Input:        "input",
	problem.Example:      "examples",
	problem.Trials:       "trials",
	problem.From:         "fromRun",
	problem.Baseline:     "baseline",
	problem.Conversation: "conversation",
}

// startupOf is what the server is started with (Config): no argument can
// set these, so a step names them as the server's settings.
var startupOf = map[problem.Setting]string{
	problem.Endpoint:      "endpoint",
	problem.KeyEnv:        "key-env",
	problem.JudgeEndpoint: "judge-endpoint",
	problem.JudgeKeyEnv:   "judge-key-env",
	problem.Concurrency:   "concurrency",
	problem.ToolBindings:  "tool-bindings",
	problem.Root:          "root",
}

// toolOf is the tool that does what a command does. A command with no
// tool (kmx check, clearing retained failures) is "": MCP's refusals list
// a file's blocking diagnostics themselves.
var toolOf = map[problem.Setting]string{
	problem.RunCmd:  "Run",
	problem.TestCmd: "Test",
}

// words is how MCP names a setting in a refusal (problem.Words): a tool
// argument as the client's model would pass it (`model "fake"`), a startup
// setting as the server's, never as a command line flag. A setting MCP
// does not have (an input file, a shard, kmx chat's discard and clear) is
// "", and the engine's sentence offers the other ways. A command is the
// tool that does the same (Test), its value (the file) being the call's.
func words(s problem.Setting, value string) string {
	if s == problem.Call {
		return "call"
	}
	if tool, ok := toolOf[s]; ok {
		return tool
	}
	if arg, ok := argumentOf[s]; ok {
		switch {
		case value == "":
			return "the " + arg + " argument"
		case s == problem.Example:
			return arg + ` ["` + value + `"]`
		case s == problem.Trials || strings.HasPrefix(value, `"`):
			return arg + " " + value
		}
		return arg + ` "` + value + `"`
	}
	if name, ok := startupOf[s]; ok {
		if value == "" {
			return "the server's startup " + name
		}
		return "the server's startup " + name + " " + value
	}
	return ""
}
