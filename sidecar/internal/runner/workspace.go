package runner

import (
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/state"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// scratchFolder is where a run's scratch copies live, under the private
// state root (<state>/local-preview/workspaces): never beside the agent file, so a copy can never be read as
// a fixture (a fixture is a clean relative folder beside the agent).
const scratchFolder = "workspaces"

// scratchArea is a run's scratch copies of its fixture workspaces: one per
// example (each trial its own), under the state root's private workspaces
// folder, registered for the harness while its turn runs.
type scratchArea struct {
	parent string
	keep   bool
	reg    workspace.Registry
}

// newScratchArea makes sure the private folder for scratch copies exists.
func newScratchArea(root string, keep bool) (*scratchArea, error) {
	parent, err := state.EnsurePrivateDir(root, "local-preview", scratchFolder)
	if err != nil {
		return nil, &invocation.Refusal{Msg: fmt.Sprintf("the scratch workspace folder cannot be used: %v", err), Next: "make the state folder private to you (chmod 700), or set KMX_HOME to a private folder"}
	}
	return &scratchArea{parent: parent, keep: keep}, nil
}

// open copies fx for one example and registers the copy. ref is what the
// session is placed with: the copy's key, the fixture, its hash and the
// paths the example's content assertions name.
func (a *scratchArea) open(fx *workspace.Fixture, paths []string) (*workspace.Workspace, *sessionspb.WorkspaceRef, error) {
	w, err := fx.Materialize(a.parent)
	if err != nil {
		return nil, nil, fmt.Errorf("copy the workspace %s: %w", fx.Rel, err)
	}
	key := a.reg.Add(w)
	return w, &sessionspb.WorkspaceRef{Key: key, Fixture: fx.Rel, Hash: fx.Hash, Paths: paths}, nil
}

// done ends a copy's use once its turn has ended (passed, failed,
// cancelled or cut): it is unregistered, then removed, or kept with
// --keep-workspace, in which case its folder is returned.
func (a *scratchArea) done(w *workspace.Workspace, ref *sessionspb.WorkspaceRef) (kept string, err error) {
	a.reg.Drop(ref.GetKey())
	if a.keep {
		return w.Dir(), w.Close()
	}
	return "", w.Remove()
}
