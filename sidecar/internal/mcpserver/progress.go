package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// progress sends one call's notifications/progress when the client asked
// for them (a progressToken in the call's _meta): one per finished
// example, in the order examples finish, its progress the examples done,
// its total the examples selected, its message "ID: verdict". A comparison
// adds each column's selection to the total as that column starts.
type progress struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	log   *slog.Logger

	mu          sync.Mutex
	done, total int
}

// newProgress is the call's progress, nil when the client sent no token.
func newProgress(ctx context.Context, ss *mcp.ServerSession, token any, log *slog.Logger) *progress {
	if token == nil || ss == nil {
		return nil
	}
	return &progress{ctx: ctx, ss: ss, token: token, log: log}
}

// observe sets opts' callbacks to report this call's progress. A nil
// progress leaves opts as they are.
func (p *progress) observe(opts *runner.Options) {
	if p == nil {
		return
	}
	opts.OnSelected = func(n int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.total += n
	}
	opts.OnFinished = func(ex runner.ExampleResult) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.done++
		err := p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{
			ProgressToken: p.token,
			Progress:      float64(p.done),
			Total:         float64(p.total),
			Message:       fmt.Sprintf("%s: %s", ex.ID, ex.Verdict),
		})
		if err != nil {
			// The client went away or stopped reading: the run goes on,
			// and its result says everything the notifications did.
			p.log.Debug("progress notification not sent", "err", err)
		}
	}
}
