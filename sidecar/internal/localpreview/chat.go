package localpreview

import (
	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// ChatTurn is what one conversation turn is sent with, decided before
// anything is created or sent (see the conversation package).
type ChatPlan struct {
	Agent *agentfile.Agent
	// Instructions are the file's instructions now.
	Instructions string
	// Model is the route the turn goes to.
	Model route.Model
}

// PrepareChat checks an agent file and one conversation input the way Run
// checks ad-hoc input (the file must be valid; the input at most 16 KiB,
// not empty, without a credential shape) and decides the model with the
// same precedence and route rules (runtime override, then the file's
// model, then the default; fake in memory, else the compatible endpoint).
// Judge settings play no part. Conversation turns are tool-free. Every
// problem is a *Refusal that says what to change.
func PrepareChat(opts Options, path string, src []byte, input string) (*ChatPlan, error) {
	res := agentfile.Parse(path, src)
	if res.State != agentfile.Valid {
		return nil, fileRefusal(path, res)
	}
	if err := checkAdHoc(input); err != nil {
		return nil, err
	}
	if err := checkRouteSettings(opts); err != nil {
		return nil, err
	}
	model := effectiveModel(opts, res.Agent)
	rt := &routes{judges: map[string]route.Model{}}
	switch {
	case model == route.Fake && opts.Endpoint != "" && !opts.StandingRoutes:
		return nil, refuse("drop --endpoint to use the fake model, or choose a real model with --model NAME",
			"the fake model runs in memory and cannot be combined with an endpoint")
	case model == route.Fake:
		rt.agentModel = route.NewFake()
	default:
		m, err := newCompatBuilder(opts).model(opts.Endpoint, opts.KeyEnv, model, "--endpoint")
		if err != nil {
			return nil, err
		}
		rt.agentModel = m
	}
	rt.agent = rt.agentModel.Identity()
	if err := checkCredentialEcho(path, &Plan{Agent: res.Agent, AdHoc: &input}, rt); err != nil {
		return nil, err
	}
	return &ChatPlan{Agent: res.Agent, Instructions: res.Agent.Instructions, Model: rt.agentModel}, nil
}
