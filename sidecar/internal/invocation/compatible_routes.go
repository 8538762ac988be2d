package invocation

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// endpointKey identifies one credential snapshot: an endpoint and the
// variable its credential is read from.
type endpointKey struct{ endpoint, keyEnv string }

// compatBuilder builds this invocation's compatible routes. The first model
// asked for on an (endpoint, key variable) pair builds the route, reading
// the variable once into memory; every other model name on that pair (the
// judge models) shares that snapshot and its HTTP client through WithModel.
// It lives only for one resolveRoutes call.
type compatBuilder struct {
	opts  Options
	bases map[endpointKey]*route.CompatibleModel
}

func newCompatBuilder(opts Options) *compatBuilder {
	return &compatBuilder{opts: opts, bases: map[endpointKey]*route.CompatibleModel{}}
}

// model returns the compatible route for one model name on endpoint; set
// names the setting the endpoint came from, for the refusal text.
func (b *compatBuilder) model(endpoint, keyEnv, model string, set problem.Setting) (route.Model, error) {
	if endpoint == "" {
		return nil, RefuseIn(func(w problem.Words) string {
			return fmt.Sprintf("pass %s (for a local Ollama: %s), or choose %s", w(set, "URL"), w(set, "http://127.0.0.1:11434/v1"), w(problem.Model, "fake"))
		}, nil, "model %q needs an OpenAI-compatible endpoint, and none is configured (models VS Code offers are reached only from the kmx extension, on the editor route)", model)
	}
	key := endpointKey{endpoint, keyEnv}
	if base, ok := b.bases[key]; ok {
		m, err := base.WithModel(model)
		if err != nil {
			return nil, routeRefusal(set, err)
		}
		return m, nil
	}
	getenv := b.opts.Getenv
	if getenv == nil {
		// The runner reads only what its caller hands it: no Getenv means
		// an empty environment, never the process's own.
		getenv = func(string) string { return "" }
	}
	m, err := route.NewCompatible(route.Config{Endpoint: endpoint, KeyEnv: keyEnv, Model: model, Getenv: getenv, HTTPClient: b.opts.HTTPClient, Words: b.opts.Words})
	if err != nil {
		return nil, routeRefusal(set, err)
	}
	cm, ok := m.(*route.CompatibleModel)
	if !ok {
		return nil, fmt.Errorf("compatible route for %s: unexpected route type %T", problem.Flags(set, ""), m)
	}
	b.bases[key] = cm
	return cm, nil
}

// routeRefusal turns a route configuration error into a refusal naming the
// setting it came from. ConfigError text never holds the endpoint or a
// credential, so it is safe to show.
func routeRefusal(set problem.Setting, err error) error {
	msg := func(w problem.Words) string { return w(set, "") + ": " + err.Error() }
	next := func(w problem.Words) string { return "fix " + w(set, "") + " or the key variable as the message says" }
	var ce *route.ConfigError
	if errors.As(err, &ce) {
		msg = func(w problem.Words) string { return w(set, "") + ": " + ce.Msg }
		switch {
		case ce.Step != nil:
			next = ce.Step
		case ce.Next != "":
			next = problem.Plain(ce.Next)
		default:
			next = func(w problem.Words) string { return "fix " + w(set, "") + " as the message says" }
		}
	}
	return RefuseIn(next, msg, "")
}

// HoldsCredential reports whether s holds a credential the invocation
// resolved. It answers only for a plan refused because its content held
// one (Prepare's credential check), so the caller can withhold from a
// refused report the identifiers copied into it before that check: a
// refusal is printed, written as JSON and JUnit, and must not carry the
// value it refused.
func (p *Plan) HoldsCredential(s string) bool {
	for _, h := range p.echoed {
		if s != "" && h.ContainsCredential(s) {
			return true
		}
	}
	return false
}

func credentialHolders(rt *Routes) []route.CredentialChecker {
	var holders []route.CredentialChecker
	if h, ok := rt.AgentModel.(route.CredentialChecker); ok {
		holders = append(holders, h)
	}
	for _, m := range rt.judges {
		if h, ok := m.(route.CredentialChecker); ok {
			holders = append(holders, h)
		}
	}
	return holders
}

// checkCredentialEcho refuses content that contains a resolved credential
// (exact value, any length). Sessions records this content when a turn
// starts, before any reply check, and the report and failure record repeat
// the identities and path, so it is checked before the journal is created.
func checkCredentialEcho(path string, plan *Plan, rt *Routes) error {
	holders := credentialHolders(rt)
	if len(holders) == 0 {
		return nil
	}
	a := plan.Agent
	type field struct{ what, text string }
	fields := []field{{"the agent file path", path}, {"the instructions", a.Instructions}, {"the agent id", a.ID}, {"the agent name", a.Name}, {"the revision", a.Revision}, {"the model name", rt.Agent.Model}}
	if plan.AdHoc != nil {
		fields = append(fields, field{"the ad-hoc input", *plan.AdHoc})
	}
	for _, ex := range plan.Selected {
		fields = append(fields, field{"the id of an example", ex.ID})
		// A multi-turn example's turns are each sent and journaled: every
		// turn's input and assertions are checked as a one-turn example's.
		for n, turn := range ex.Script() {
			of := "example " + strconv.Quote(ex.ID)
			if ex.MultiTurn() {
				of = fmt.Sprintf("turn %d of example %q", n+1, ex.ID)
			}
			fields = append(fields, field{"the input of " + of, turn.Input})
			for _, as := range turn.Assertions {
				where := fmt.Sprintf("assertion %d of %s", as.Index+1, of)
				fields = append(fields, field{where, string(as.Type)}, field{where, as.Value}, field{where, as.Operands().Rubric}, field{where, as.Operands().JudgeModel})
			}
		}
	}
	for name := range rt.judges {
		fields = append(fields, field{"a judge model name", name})
	}
	for _, f := range fields {
		for _, h := range holders {
			if f.text != "" && h.ContainsCredential(f.text) {
				return Refuse("remove the credential value from the agent file or input, or use a different credential",
					"%s contains the endpoint credential; kmx never sends or journals it", f.what)
			}
		}
	}
	return nil
}
