package invocation

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// Routes is the per-invocation snapshot of the models an invocation may
// reach: decided before the journal exists, never changed after.
type Routes struct {
	// Agent is the agent's identity, AgentModel its route.
	Agent      route.Identity
	AgentModel route.Model
	// Judge is the first judge identity, when a selected example has an
	// llmJudge assertion.
	Judge *route.Identity
	// judges maps a judge model name to its route.
	judges map[string]route.Model
	// defaultJudge is the judge model of an llmJudge with no judgeModel:
	// the agent's effective model.
	defaultJudge string
	// editor is the invocation's editor snapshot when the agent runs on
	// the editor route (its tools bind through it), else nil.
	editor *editorBuilder
}

// Resolve is the harness's model resolver for this invocation. It answers
// only for the identities decided in resolveRoutes.
func (r *Routes) Resolve(purpose string, id route.Identity) (route.Model, error) {
	switch purpose {
	case PurposeAgent:
		if id == r.Agent {
			return r.AgentModel, nil
		}
	case PurposeJudge:
		// Judges are keyed by the name the file gives; an editor model's
		// identity is its vendor and id, so match on the identity.
		for _, m := range r.judges {
			if m.Identity() == id {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("no %s route for model %q on %q in this invocation", purpose, id.Model, id.Route)
}

// JudgeIdentity is the route identity of judge model name ("" is the
// default judge: the agent's model), when the invocation resolved it.
func (r *Routes) JudgeIdentity(model string) (route.Identity, bool) {
	if model == "" {
		model = r.defaultJudge
	}
	m, ok := r.judges[model]
	if !ok {
		return route.Identity{}, false
	}
	return m.Identity(), true
}

// JudgeOffline is the refusal of a fresh sample from judge model name
// when the invocation has no route to send it on (a re-grade given no
// judge endpoint), else nil: such a sample is refused before a session is
// placed, and is never counted as sent.
func (r *Routes) JudgeOffline(model string) error {
	if model == "" {
		model = r.defaultJudge
	}
	if m, ok := r.judges[model].(*route.OfflineModel); ok {
		return m.Refusal()
	}
	return nil
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

// resolveRoutes decides every model the invocation may reach, or refuses.
// The order matters for the refusal a user sees first: the route settings
// on their own (names, URLs, pairings), then the agent's model, then each
// judge model. Nothing is created or sent here; credentials are read into
// memory once per (endpoint, key variable) by the compatible builder, and
// the models VS Code offers are listed at most once, by the editor builder.
func resolveRoutes(ctx context.Context, opts Options, plan *Plan) (*Routes, error) {
	if err := checkRouteSettings(opts); err != nil {
		return nil, err
	}
	model := effectiveModel(opts, plan.Agent)
	rt := &Routes{judges: map[string]route.Model{}, defaultJudge: model}
	cb := newCompatBuilder(opts)
	eb := newEditorBuilder(opts.Editor)
	switch {
	case model == route.Fake && opts.Endpoint != "" && !opts.StandingRoutes:
		return nil, RefuseIn(func(w problem.Words) string {
			return "drop " + w(problem.Endpoint, "") + " to use the fake model, or choose a real model with " + w(problem.Model, "NAME")
		}, nil, "the fake model runs in memory and cannot be combined with an endpoint")
	case model == route.Fake:
		rt.AgentModel = route.NewFake()
	case opts.Endpoint == "" && eb != nil:
		// The editor route: a non-fake model with no endpoint, in VS Code.
		m, err := eb.model(ctx, agentModelRefs(opts, plan.Agent), "the agent's model")
		if err != nil {
			return nil, err
		}
		rt.AgentModel = m
		rt.editor = eb
		// An llmJudge with no judgeModel judges on the agent's resolved
		// model, not on a second resolution of its name.
		rt.judges[model] = m
	case opts.Endpoint == "" && opts.Regrade:
		// A re-grade sends no agent turn: the model is the identity the
		// source run answered with, and no endpoint is needed for it
		// (issue 31 item 10). A judge sample that must be fresh says so.
		rt.AgentModel = route.NewOffline(route.Identity{Route: route.Compatible, Model: model}, opts.Say(func(w problem.Words) string { return w(problem.Endpoint, "") }))
	default:
		noModel := opts.Model == "" && (plan.Agent.Model == nil || *plan.Agent.Model == "")
		if opts.Endpoint != "" && noModel {
			return nil, RefuseIn(endpointModelNext, nil,
				"the agent file names no model, and on an endpoint kmx sends only a model you name (never its default %s)", DefaultModel)
		}
		if noModel {
			// Said in one step: naming the default's need for an endpoint
			// would only lead to the refusal above.
			return nil, RefuseIn(func(w problem.Words) string {
				return fmt.Sprintf("choose %s to try it on the fake model, or a model an endpoint serves with %s and %s", w(problem.Model, "fake"), w(problem.Endpoint, "URL"), w(problem.Model, "NAME"))
			}, nil, "the agent file names no model, so kmx has none to send")
		}
		m, err := cb.model(opts.Endpoint, opts.KeyEnv, model, problem.Endpoint)
		if err != nil {
			return nil, err
		}
		// Checked once the route is built: it refused a model name holding
		// the credential, so the name may be shown.
		if err := checkEndpointModel(opts, plan.Agent, model); err != nil {
			return nil, err
		}
		rt.AgentModel = m
	}
	rt.Agent = rt.AgentModel.Identity()

	var judged bool
	for _, ex := range plan.Selected {
		// A multi-turn example's judges are its turns' (Assertions is
		// empty beside turns:).
		for _, a := range ex.AllAssertions() {
			if a.Type != agentfile.LLMJudge {
				continue
			}
			judged = true
			name := a.Operands().JudgeModel
			if name == "" {
				name = model
			}
			if m, ok := rt.judges[name]; ok {
				if rt.Judge == nil {
					id := m.Identity()
					rt.Judge = &id
				}
				continue
			}
			m, err := judgeModel(ctx, opts, cb, eb, name, model)
			if err != nil {
				return nil, refusalAt(err, a.Range)
			}
			rt.judges[name] = m
			if rt.Judge == nil {
				id := m.Identity()
				rt.Judge = &id
			}
		}
	}
	if !judged && !opts.StandingRoutes && (opts.JudgeEndpoint != "" || opts.JudgeKeyEnv != "") {
		return nil, RefuseIn(func(w problem.Words) string {
			return "drop " + w(problem.JudgeEndpoint, "") + "/" + w(problem.JudgeKeyEnv, "") + ", or select an example with an llmJudge assertion"
		}, nil, "a judge endpoint was given, but no selected example has an llmJudge assertion")
	}
	return rt, nil
}

// endpointModelNext is the next step of a model an endpoint cannot be sent.
func endpointModelNext(w problem.Words) string {
	return fmt.Sprintf("pass %s with the name the endpoint serves the model under (for a local Ollama, for example %s)", w(problem.Model, "NAME"), w(problem.Model, "llama3.2"))
}

// vscodeModelName is VS Code's display form of a model, "Name (vendor)",
// as agent files name them: it names a model VS Code offers, which an
// OpenAI-compatible endpoint does not serve under that name.
var vscodeModelName = regexp.MustCompile(`^\S.*\s\([^()\s][^()]*\)$`)

// checkEndpointModel refuses, before anything is sent, an agent model an
// endpoint would be sent verbatim and could only answer with a 404: a name
// in VS Code's "Name (vendor)" form, or the first of a model list the file
// names (VS Code tries them in order; an endpoint serves the one you name).
func checkEndpointModel(opts Options, a *agentfile.Agent, model string) error {
	if opts.Model == "" && len(a.Models) > 1 {
		return RefuseIn(endpointModelNext, nil,
			"the agent file lists %d models (%s), which VS Code tries in order; on an endpoint kmx sends the one model you name", len(a.Models), strings.Join(a.Models, ", "))
	}
	if vscodeModelName.MatchString(model) {
		return RefuseIn(func(w problem.Words) string {
			return endpointModelNext(w) + ", or run the agent from the kmx extension in VS Code, which offers that model"
		}, nil,
			"model %q is in VS Code's Name (vendor) form, which names a model VS Code offers, not one an endpoint serves", model)
	}
	return nil
}

// checkRouteSettings refuses route settings that are wrong on their own,
// whatever model is chosen: an invalid key variable name (checked even when
// no endpoint is given, so a pasted credential in --key-env is always
// refused), a key variable without its endpoint, and an endpoint that breaks
// the route rules.
func checkRouteSettings(opts Options) error {
	for _, kv := range []struct {
		flag problem.Setting
		name string
	}{{problem.KeyEnv, opts.KeyEnv}, {problem.JudgeKeyEnv, opts.JudgeKeyEnv}} {
		if kv.name == "" {
			continue
		}
		if err := route.ValidateKeyEnv(kv.name); err != nil {
			return routeRefusal(kv.flag, err)
		}
	}
	if opts.KeyEnv != "" && opts.Endpoint == "" {
		return RefuseIn(func(w problem.Words) string {
			return "pass " + w(problem.Endpoint, "URL") + " for the credential, or drop " + w(problem.KeyEnv, "")
		}, func(w problem.Words) string {
			return w(problem.KeyEnv, "") + " names the credential of " + w(problem.Endpoint, "") + ", but " + noneGiven(w, problem.Endpoint)
		}, "")
	}
	if opts.JudgeKeyEnv != "" && opts.JudgeEndpoint == "" {
		return RefuseIn(func(w problem.Words) string {
			return "pass " + w(problem.JudgeEndpoint, "URL") + " for the credential, or drop " + w(problem.JudgeKeyEnv, "") + " (a judge on the agent's endpoint uses " + w(problem.KeyEnv, "") + ")"
		}, func(w problem.Words) string {
			return w(problem.JudgeKeyEnv, "") + " names the credential of " + w(problem.JudgeEndpoint, "") + ", but " + noneGiven(w, problem.JudgeEndpoint)
		}, "")
	}
	for _, ep := range []struct {
		flag        problem.Setting
		url, keyEnv string
	}{{problem.Endpoint, opts.Endpoint, opts.KeyEnv}, {problem.JudgeEndpoint, opts.JudgeEndpoint, opts.JudgeKeyEnv}} {
		if ep.url == "" {
			continue
		}
		if _, err := route.ParseEndpoint(ep.url, ep.keyEnv); err != nil {
			return routeRefusal(ep.flag, err)
		}
	}
	return nil
}

// noneGiven says that setting s was not given: "no --endpoint is given"
// on the command line, "none is set" where s names a setting in a phrase.
func noneGiven(w problem.Words, s problem.Setting) string {
	if problem.CommandLine(w) {
		return "no " + w(s, "") + " is given"
	}
	return "none is set"
}

// judgeModel decides the route of one judge model: the fake judge in memory
// for "fake", else the explicit judge endpoint, else the agent's endpoint,
// else (in VS Code) the models VS Code offers.
func judgeModel(ctx context.Context, opts Options, cb *compatBuilder, eb *editorBuilder, name, agentModel string) (route.Model, error) {
	if name == route.Fake {
		if opts.JudgeEndpoint != "" && !opts.StandingRoutes {
			return nil, RefuseIn(func(w problem.Words) string {
				return "drop " + w(problem.JudgeEndpoint, "") + ", or name a real judgeModel"
			}, nil, "judge model \"fake\" runs in memory and cannot be combined with a judge endpoint")
		}
		return judge.NewFakeModel(), nil
	}
	switch {
	case opts.JudgeEndpoint != "":
		return endpointJudge(cb.model(opts.JudgeEndpoint, opts.JudgeKeyEnv, name, problem.JudgeEndpoint))
	case opts.Endpoint != "" && agentModel != route.Fake:
		return endpointJudge(cb.model(opts.Endpoint, opts.KeyEnv, name, problem.Endpoint))
	case eb != nil:
		return eb.model(ctx, []string{name}, fmt.Sprintf("judge model %q", name))
	case opts.Regrade:
		// Reused from the source run when it can be; a fresh sample is
		// refused, naming --judge-endpoint.
		return route.NewOffline(route.Identity{Route: route.Compatible, Model: name}, opts.Say(func(w problem.Words) string {
			return w(problem.JudgeEndpoint, "") + " (or " + w(problem.Endpoint, "") + ")"
		})), nil
	}
	return nil, RefuseIn(func(w problem.Words) string {
		return "set judgeModel: fake, or pass " + w(problem.JudgeEndpoint, "URL") + " for a real judge"
	}, nil, "llmJudge needs a judge: judge model %q has no endpoint", name)
}

// endpointJudge refuses a judge model an endpoint route was built for when
// its name is in VS Code's "Name (vendor)" form (the route refused a name
// holding the credential, so the name may be shown).
func endpointJudge(m route.Model, err error) (route.Model, error) {
	if err != nil {
		return nil, err
	}
	if name := m.Identity().Model; vscodeModelName.MatchString(name) {
		return nil, Refuse("set judgeModel to the name the judge endpoint serves the model under, or omit it to judge on the agent's model",
			"judge model %q is in VS Code's Name (vendor) form, which names a model VS Code offers, not one an endpoint serves", name)
	}
	return m, nil
}
