package sessions

import (
	"errors"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
)

// ErrHarnessNotBuilt marks a placement on a harness this build cannot serve.
var ErrHarnessNotBuilt = errors.New("harness not built")

// maxTools matches the agent file's limit on declared tool names.
const maxTools = 32

// Place picks the harness for a session: "chat" when no tools are declared,
// "kmx-local-tools-v1" otherwise. That harness is not built yet, so a session
// with tools is refused here, before anything is journaled.
func Place(tools []string) (string, error) {
	if len(tools) > maxTools {
		return "", fmt.Errorf("place session: %d tools declared, at most %d are allowed: remove some from the agent file", len(tools), maxTools)
	}
	seen := make(map[string]bool, len(tools))
	for i, name := range tools {
		if name == "" {
			return "", fmt.Errorf("place session: tool %d has no name: give every declared tool a name", i+1)
		}
		if seen[name] {
			return "", fmt.Errorf("place session: tool %q is declared twice: declare each tool once", name)
		}
		seen[name] = true
	}
	if len(tools) > 0 {
		return "", fmt.Errorf("place session: tools need the %q harness, which is not built yet: remove \"tools\" from the agent file to run it on %q: %w", harness.LocalTools, harness.Chat, ErrHarnessNotBuilt)
	}
	return harness.Chat, nil
}
