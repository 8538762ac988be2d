package localpreview

import (
	"fmt"
	"strconv"

	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// compatibleModel builds the OpenAI-compatible route for one model name,
// reading the credential variable (if named) once, into memory.
func compatibleModel(endpoint, keyEnv, model string, opts Options, flag string) (route.Model, error) {
	if endpoint == "" {
		return nil, refuse(fmt.Sprintf("pass %s URL (for a local Ollama: %s http://127.0.0.1:11434/v1), or choose --model fake", flag, flag),
			"model %q needs an OpenAI-compatible endpoint, and none is configured", model)
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	m, err := route.NewCompatible(route.Config{Endpoint: endpoint, KeyEnv: keyEnv, Model: model, Getenv: getenv})
	if err != nil {
		return nil, &Refusal{Msg: err.Error(), Next: "fix " + flag + " or the key variable as the message says"}
	}
	return m, nil
}

// credentialHolder is a route that holds a credential and can say whether a
// text contains it, without ever handing the value out.
type credentialHolder interface {
	ContainsCredential(s string) bool
}

// checkCredentialEcho refuses content that contains a resolved credential
// (exact value, any length). Sessions records this content when a turn
// starts, before any reply check, so it is checked before the journal is
// created.
func checkCredentialEcho(plan *Plan, rt *routes) error {
	var holders []credentialHolder
	if h, ok := rt.agentModel.(credentialHolder); ok {
		holders = append(holders, h)
	}
	for _, m := range rt.judges {
		if h, ok := m.(credentialHolder); ok {
			holders = append(holders, h)
		}
	}
	if len(holders) == 0 {
		return nil
	}
	a := plan.Agent
	type field struct{ what, text string }
	fields := []field{{"the instructions", a.Instructions}, {"the agent id", a.ID}, {"the revision", a.Revision}, {"the model name", rt.agent.Model}}
	if plan.AdHoc != nil {
		fields = append(fields, field{"the ad-hoc input", *plan.AdHoc})
	}
	for _, ex := range plan.Selected {
		fields = append(fields, field{"the id of example " + strconv.Quote(ex.ID), ex.ID}, field{"the input of example " + strconv.Quote(ex.ID), ex.Input})
		for _, as := range ex.Assertions {
			where := fmt.Sprintf("assertion %d of example %q", as.Index+1, ex.ID)
			fields = append(fields, field{where, string(as.Type)}, field{where, as.Value}, field{where, as.Rubric}, field{where, as.JudgeModel})
		}
	}
	for name := range rt.judges {
		fields = append(fields, field{"a judge model name", name})
	}
	for _, f := range fields {
		for _, h := range holders {
			if f.text != "" && h.ContainsCredential(f.text) {
				return refuse("remove the credential value from the agent file or input, or use a different credential",
					"%s contains the endpoint credential; kmx never sends or journals it", f.what)
			}
		}
	}
	return nil
}
