package invocation

import (
	"context"
	"errors"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// editorListBound bounds the preflight's one listing of the models VS Code
// offers.
const editorListBound = 30 * time.Second

// editorBuilder resolves this invocation's editor models: the preflight
// (the seed's credential snapshot). It lists the models VS Code offers at
// most once, resolves every reference against that one listing, and hands
// out models of one route.EditorSession, so the whole invocation uses
// exactly what the preflight resolved and stops at the first failure. It
// lives only for one resolveRoutes call.
type editorBuilder struct {
	host    route.EditorHost
	session *route.EditorSession
	offered []route.EditorModelInfo
	listed  bool
}

func newEditorBuilder(host route.EditorHost) *editorBuilder {
	if host == nil {
		return nil
	}
	return &editorBuilder{host: host, session: route.NewEditorSession(host)}
}

// model resolves refs (a file's model list, an override, a judge model)
// to exactly one model VS Code offers, or refuses saying what to change.
func (b *editorBuilder) model(ctx context.Context, refs []string, what string) (route.Model, error) {
	if !b.listed {
		lctx, cancel := context.WithTimeout(ctx, editorListBound)
		offered, err := b.host.Models(lctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var ee *route.EditorError
			if errors.As(err, &ee) && ee.Class == route.EditorNoHost {
				return nil, Refuse("run it from the kmx VS Code extension, or use model: fake or --endpoint URL", "%s", err.Error())
			}
			return nil, Refuse("try again; if it keeps failing, run kmx: Restart Language Server and see the kmx output channel",
				"VS Code did not list the language models it offers")
		}
		b.offered, b.listed = offered, true
	}
	info, err := route.ResolveEditorModel(refs, b.offered)
	if err != nil {
		var re *route.ResolveError
		if errors.As(err, &re) {
			return nil, Refuse(re.Next, "%s: %s", what, re.Msg)
		}
		return nil, err
	}
	return b.session.Model(info), nil
}

// bindTools binds each wanted tool to the tool VS Code offers for it,
// listing the tools once, freezes the binding in the session (the
// tool-side half of the preflight) and returns the bound function names.
func (b *editorBuilder) bindTools(ctx context.Context, wants []route.EditorToolWant) (map[string]bool, error) {
	lctx, cancel := context.WithTimeout(ctx, editorListBound)
	offered, err := b.host.Tools(lctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, Refuse("try again; if it keeps failing, run kmx: Restart Language Server and see the kmx output channel",
			"VS Code did not list the tools it offers")
	}
	bound, err := route.BindEditorTools(wants, offered)
	if err != nil {
		var be *route.ToolBindError
		if errors.As(err, &be) {
			return nil, Refuse(be.Next, "%s", be.Msg)
		}
		return nil, err
	}
	b.session.BindTools(bound)
	out := make(map[string]bool, len(bound))
	for fn := range bound {
		out[fn] = true
	}
	return out, nil
}

// invokeTool is the harness's live executor on the editor route: the
// bound tool, through vscode.lm.invokeTool.
func (b *editorBuilder) invokeTool(ctx context.Context, call route.ToolCall, _ localtools.Tool) (string, error) {
	return b.session.InvokeTool(ctx, call.Name, call.Arguments)
}

// agentModelRefs is the agent's model reference list in precedence order:
// the runtime override alone, else the file's model list (VS Code uses the
// first that resolves), else the default.
func agentModelRefs(opts Options, a *agentfile.Agent) []string {
	switch {
	case opts.Model != "":
		return []string{opts.Model}
	case len(a.Models) > 0:
		return append([]string(nil), a.Models...)
	case a.Model != nil && *a.Model != "":
		return []string{*a.Model}
	}
	return []string{DefaultModel}
}
