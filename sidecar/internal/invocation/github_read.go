package invocation

import (
	"context"
	"fmt"
	"sync"

	"github.com/kmxdev/kmx/sidecar/internal/ghread"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// githubRead is one invocation's live executor for the --tool-bindings
// tool: the binding and the credential read once before the journal
// existed. Each call is one ghread.Read (a fresh MCP session, 30 s inside
// the example's deadline); a failure fails the call and nothing is
// retried. Every successful result is kept in memory as a trusted
// observation, which a capture must match in the finalized journal.
type githubRead struct {
	name, repository, token, version string

	mu       sync.Mutex
	observed []observation
}

// observation is one successful live call as executed.
type observation struct {
	name, arguments, result string
}

// call is the harness's live executor (harness.LiveTools).
func (g *githubRead) call(ctx context.Context, call route.ToolCall, _ localtools.Tool) (string, error) {
	if call.Name != g.name {
		// Freeze binds only g.name live: anything else is a broken invariant.
		return "", fmt.Errorf("no live binding for %q", call.Name)
	}
	// The read is a fixed query: it takes no arguments.
	if !localtools.SameJSON(call.Arguments, "{}") {
		return "", fmt.Errorf("%s takes no arguments; the call passed some", g.name)
	}
	text, err := ghread.Read(ctx, ghread.Config{Repository: g.repository, Token: g.token, Version: g.version})
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	g.observed = append(g.observed, observation{name: call.Name, arguments: call.Arguments, result: text})
	g.mu.Unlock()
	return text, nil
}

// saw reports whether this invocation's executor returned exactly result
// for a call of name with arguments.
func (g *githubRead) saw(name, arguments, result string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.observed {
		if o.name == name && o.arguments == arguments && o.result == result {
			return true
		}
	}
	return false
}

// CapturesLive reports whether the plan binds a tool live through a
// --tool-bindings file, whose results a capture may save into pending
// recordings.
func (p *Plan) CapturesLive() bool { return p.tools.github != nil }

// Observed reports whether this invocation's --tool-bindings executor
// returned exactly result for a call of name with arguments: a capture
// saves only what the invocation itself observed.
func (p *Plan) Observed(name, arguments, result string) bool {
	g := p.tools.github
	return g != nil && g.saw(name, arguments, result)
}
