package localpreview

import (
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// routes is the per-invocation snapshot of the models an invocation may
// reach: decided before the journal exists, never changed after.
type routes struct {
	agent      route.Identity
	agentModel route.Model
	judge      *route.Identity
	// judges maps a judge model name to its route.
	judges map[string]route.Model
	// defaultJudge is the judge model of an llmJudge with no judgeModel:
	// the agent's effective model.
	defaultJudge string
}

// resolve is the harness's model resolver for this invocation. It answers
// only for the identities decided in resolveRoutes.
func (r *routes) resolve(purpose string, id route.Identity) (route.Model, error) {
	switch purpose {
	case PurposeAgent:
		if id == r.agent {
			return r.agentModel, nil
		}
	case PurposeJudge:
		if m, ok := r.judges[id.Model]; ok && m.Identity() == id {
			return m, nil
		}
	}
	return nil, fmt.Errorf("no %s route for model %q on %q in this invocation", purpose, id.Model, id.Route)
}

func (r *routes) judgeIdentity(model string) (route.Identity, bool) {
	if model == "" {
		model = r.defaultJudge
	}
	m, ok := r.judges[model]
	if !ok {
		return route.Identity{}, false
	}
	return m.Identity(), true
}

// effectiveModel applies the precedence: runtime override, then the file's
// model, then the default.
func effectiveModel(opts Options, a *agentfile.Agent) string {
	switch {
	case opts.Model != "":
		return opts.Model
	case a.Model != nil && *a.Model != "":
		return *a.Model
	}
	return DefaultModel
}

func resolveRoutes(opts Options, plan *Plan) (*routes, error) {
	model := effectiveModel(opts, plan.Agent)
	rt := &routes{judges: map[string]route.Model{}, defaultJudge: model}
	switch {
	case model == route.Fake && opts.Endpoint != "":
		return nil, refuse("drop --endpoint to use the fake model, or choose a real model with --model NAME",
			"the fake model runs in memory and cannot be combined with an endpoint")
	case model == route.Fake:
		rt.agentModel = route.NewFake()
	default:
		m, err := compatibleModel(opts.Endpoint, opts.KeyEnv, model, opts, "--endpoint")
		if err != nil {
			return nil, err
		}
		rt.agentModel = m
	}
	rt.agent = rt.agentModel.Identity()

	var judged bool
	for _, ex := range plan.Selected {
		for _, a := range ex.Assertions {
			if a.Type != agentfile.LLMJudge {
				continue
			}
			judged = true
			name := a.JudgeModel
			if name == "" {
				name = model
			}
			if _, ok := rt.judges[name]; ok {
				continue
			}
			m, err := judgeModel(opts, name, model, rt)
			if err != nil {
				return nil, err
			}
			rt.judges[name] = m
			if rt.judge == nil {
				id := m.Identity()
				rt.judge = &id
			}
		}
	}
	if !judged && (opts.JudgeEndpoint != "" || opts.JudgeKeyEnv != "") {
		return nil, refuse("drop --judge-endpoint/--judge-key-env, or select an example with an llmJudge assertion",
			"a judge endpoint was given, but no selected example has an llmJudge assertion")
	}
	return rt, nil
}

// judgeModel decides the route of one judge model: the fake judge in memory
// for "fake", else the explicit judge endpoint, else the agent's endpoint.
func judgeModel(opts Options, name, agentModel string, rt *routes) (route.Model, error) {
	if name == route.Fake {
		if opts.JudgeEndpoint != "" {
			return nil, refuse("drop --judge-endpoint, or name a real judgeModel", "judge model \"fake\" runs in memory and cannot be combined with a judge endpoint")
		}
		return judge.NewFakeModel(), nil
	}
	switch {
	case opts.JudgeEndpoint != "":
		return compatibleModel(opts.JudgeEndpoint, opts.JudgeKeyEnv, name, opts, "--judge-endpoint")
	case opts.Endpoint != "" && agentModel != route.Fake:
		return compatibleModel(opts.Endpoint, opts.KeyEnv, name, opts, "--endpoint")
	}
	return nil, refuse("set judgeModel: fake, or pass --judge-endpoint URL for a real judge",
		"llmJudge needs a judge: judge model %q has no endpoint", name)
}
