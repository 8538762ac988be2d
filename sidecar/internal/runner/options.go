package runner

import "github.com/kmxdev/kmx/sidecar/internal/invocation"

// Settings are what every front configures a run with: the CLI's flags,
// the editor's settings, kmx mcp's startup flags (plus a tool's model
// argument). Endpoints and credential variable names, never values.
type Settings struct {
	Model                                        string
	Endpoint, KeyEnv, JudgeEndpoint, JudgeKeyEnv string
	// Concurrency bounds the examples sent at once (0: the default).
	Concurrency int
	// Standing: the endpoints are the front's standing configuration
	// (editor, MCP), not a choice for this invocation (CLI). See
	// Options.StandingRoutes.
	Standing bool
}

// NewOptions turns a front's settings into runner options, so the three
// fronts cannot map them differently.
func NewOptions(s Settings, getenv func(string) string, version string) Options {
	return Options{Options: invocation.Options{
		Getenv:         getenv,
		Model:          s.Model,
		Endpoint:       s.Endpoint,
		KeyEnv:         s.KeyEnv,
		JudgeEndpoint:  s.JudgeEndpoint,
		JudgeKeyEnv:    s.JudgeKeyEnv,
		StandingRoutes: s.Standing,
		Concurrency:    s.Concurrency,
		Version:        version,
	}}
}
