package invocation

import (
	"context"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// ChatPlan is what one conversation turn is sent with, decided before
// anything is created or sent (see the conversation package).
type ChatPlan struct {
	Agent *agentfile.Agent
	// Instructions are the file's instructions now.
	Instructions string
	// Model is the route the turn goes to.
	Model route.Model
	// Tools is the declared tools' set for this turn, frozen from kmx.yaml
	// alone (empty for a file that declares none): a conversation has no
	// recordings and binds nothing, so an Enabled tool answers the stub.
	Tools []localtools.Tool
}

// PrepareChat checks an agent file and one conversation input the way Run
// checks ad-hoc input (the file must be valid; the input at most 16 KiB,
// not empty, without a credential shape) and decides the model with the
// same precedence and route rules (runtime override, then the file's
// model, then the default; fake in memory, the editor's models in VS Code,
// else the compatible endpoint).
// Judge settings play no part. A tool-declaring file's turns run on the
// tool harness with the tools frozen from kmx.yaml (refused as Run and Test
// refuse an unusable kmx.yaml, or on an endpoint a name it cannot accept).
// Every problem is a *Refusal that says what to change.
func PrepareChat(ctx context.Context, opts Options, path string, src []byte, input string) (*ChatPlan, error) {
	// With a sibling examples file the instructions are the whole body, as
	// VS Code sends them (agentfile.ParsePair).
	res, _, err := agentfile.ParseFile(path, src, ReadPairFile)
	if err != nil {
		return nil, Refuse("open the agent file itself to chat with it", "%v", err)
	}
	if res.State != agentfile.Valid {
		return nil, fileRefusal(path, res)
	}
	if err := checkAdHoc(input); err != nil {
		return nil, err
	}
	// The same route decision as Run's (fake, editor or compatible), with
	// no examples selected, so no judge is resolved.
	plan := &Plan{Agent: res.Agent, AdHoc: &input}
	// No binding: a conversation's tools are frozen from kmx.yaml alone.
	noBinding := opts
	noBinding.ToolBinding = nil
	if err := prepareTools(noBinding, Request{Path: path, Source: src}, plan); err != nil {
		return nil, err
	}
	rt, err := resolveRoutes(ctx, opts, plan)
	if err != nil {
		return nil, err
	}
	if err := checkCredentialEcho(path, plan, rt); err != nil {
		return nil, err
	}
	if rt.Agent.Route == route.Compatible {
		if err := checkFunctionNames(plan); err != nil {
			return nil, err
		}
	}
	return &ChatPlan{Agent: res.Agent, Instructions: res.Agent.Instructions, Model: rt.AgentModel, Tools: plan.tools.sets[AdHocID]}, nil
}
