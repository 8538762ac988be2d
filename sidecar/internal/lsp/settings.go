package lsp

import (
	"context"
	"fmt"
	"regexp"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// envName is a portable environment variable name. Settings name the
// variable holding a credential; they never hold the credential.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkSettings says what is wrong with a settings object, or "". A
// credential-shaped value anywhere refuses the whole object: it is never
// stored, logged or echoed (the message names the field and the shape only).
func checkSettings(st Settings) string {
	fields := []struct{ name, value string }{
		{"model", st.Model},
		{"endpoint", st.Endpoint},
		{"keyEnv", st.KeyEnv},
		{"judgeEndpoint", st.JudgeEndpoint},
		{"judgeKeyEnv", st.JudgeKeyEnv},
	}
	for _, f := range fields {
		if found := secrets.Scan(f.value); len(found) > 0 {
			return fmt.Sprintf("kmx.%s holds a credential-shaped value (%s); settings take the NAME of an environment variable that holds the credential, never the value: put the credential in a variable and set kmx.keyEnv to its name",
				f.name, found[0].Shape)
		}
	}
	if st.Concurrency < 0 || st.Concurrency > invocation.MaxConcurrency {
		return fmt.Sprintf("kmx.concurrency is %d; set it to a whole number from 1 to %d (1 runs examples one at a time), or remove it for the default %d",
			st.Concurrency, invocation.MaxConcurrency, invocation.DefaultConcurrency)
	}
	for _, f := range fields[2:] {
		if f.name == "judgeEndpoint" || f.value == "" {
			continue
		}
		if !envName.MatchString(f.value) {
			return fmt.Sprintf("kmx.%s must be the name of an environment variable (letters, digits and _, not starting with a digit); the credential itself stays in that variable", f.name)
		}
	}
	return ""
}

// refuseSettings tells the user a settings object was ignored and why.
func (s *Server) refuseSettings(ctx context.Context, where, problem string) {
	s.log.Warn("settings refused and ignored", "where", where)
	s.notify(ctx, "window/showMessage", &showMessageParams{
		Type:    messageTypeError,
		Message: "kmx ignored the settings from " + where + ": " + problem,
	})
}
