package sessions

import (
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
)

// maxTools bounds the tools one session offers: the agent file declares at
// most 32 references, and a tool set stands for several tools.
const maxTools = localtools.MaxOfferedTools

// Place picks the harness for a session: "chat" when no tools are declared,
// "kmx-local-tools-v1" otherwise. A declared tool is never left out: any
// tool places the session on the tool harness, which offers every one.
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
		return harness.LocalTools, nil
	}
	return harness.Chat, nil
}
