package agentfile

import (
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/workspacepath"
)

// The path checks of `workspace:` and of the file assertions, where the
// file writes them: package workspacepath's rules, the same package
// workspace applies on disk.

// checkWorkspaceDir checks a fixture folder as written.
func checkWorkspaceDir(rel string) error {
	if problem, fix := workspacepath.CheckDir(rel); problem != "" {
		return fmt.Errorf("workspace %q %s; %s", rel, problem, fix)
	}
	return nil
}

// checkWorkspaceFile checks a workspace file path as an assertion writes it.
func checkWorkspaceFile(p string) error { return workspacepath.CheckFile(p) }
