package route

import (
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// WithModel returns the compatible route for another model name on the same
// endpoint, sharing this route's credential snapshot and HTTP client. The
// runner uses it so one invocation reads each credential variable once,
// however many models (the agent's, each judge model) it asks for on that
// endpoint. The model name is checked as NewCompatible checks it; a problem
// is a *ConfigError and the receiver is unchanged.
func (c *CompatibleModel) WithModel(model string) (*CompatibleModel, error) {
	if model == "" {
		return nil, configErrIn("model", "no model name is set for the endpoint", noModelNext)
	}
	if strings.EqualFold(model, Fake) {
		return nil, configErrIn("model", "the fake model cannot be combined with an endpoint", fakeWithEndpointNext)
	}
	if c.credential != "" && secrets.ContainsValue(model, c.credential) {
		return nil, configErr("model", "the model name contains the endpoint credential",
			"give the model's name, not the credential")
	}
	out := *c
	out.model = model
	return &out, nil
}
