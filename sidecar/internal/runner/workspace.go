package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/sessionspb"
	"github.com/kmxdev/kmx/sidecar/internal/state"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// scratchFolder is where a run's scratch copies live, under the private
// state root (<state>/local-preview/workspaces/<run>/): never beside the
// agent file, so a copy can never be read as a fixture (a fixture is a
// clean relative folder beside the agent). Each run's copies are in a
// folder named for the run, so that copies a killed run could not remove
// are known for a run that is no longer executing (removeAbandonedScratch).
const scratchFolder = "workspaces"

// keptMarker, in a run's scratch folder, says its copies were kept on
// purpose (--keep-workspace): nothing removes them but the user.
const keptMarker = "kept"

// scratchArea is a run's scratch copies of its fixture workspaces: one per
// example (each trial its own), under the state root's private workspaces
// folder, registered for the harness while its turns run.
type scratchArea struct {
	parent string
	keep   bool
	reg    workspace.Registry
}

// newScratchArea makes sure the private folder for run's scratch copies
// exists (marked kept with keep).
func newScratchArea(root, run string, keep bool) (*scratchArea, error) {
	parent, err := state.EnsurePrivateDir(root, "local-preview", scratchFolder, run)
	if err == nil && keep {
		err = os.WriteFile(filepath.Join(parent, keptMarker), nil, 0o600)
	}
	if err != nil {
		return nil, &invocation.Refusal{Msg: fmt.Sprintf("the scratch workspace folder cannot be used: %v", err), Next: "make the state folder private to you (chmod 700), or set KMX_HOME to a private folder"}
	}
	return &scratchArea{parent: parent, keep: keep}, nil
}

// close removes the run's scratch folder once every copy in it is removed
// (a kept copy keeps it). A folder left behind is removed by a later
// run's removeAbandonedScratch.
func (a *scratchArea) close() {
	if a != nil && !a.keep {
		_ = os.Remove(a.parent)
	}
}

// removeAbandonedScratch removes the scratch copies of runs that are not
// executing: a run killed outright never removed its own. It is called as
// a run starts, beside journal retention. The copies of a run whose
// journal lock is held (in this or another process, an executing run) are
// never touched, nor kept ones (keptMarker), nor any name kmx did not give
// a run's folder. Errors are returned together after every folder was
// tried; a run's result never depends on them.
func removeAbandonedScratch(root, journals string) error {
	parent := filepath.Join(root, "local-preview", scratchFolder)
	entries, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove abandoned scratch workspaces: %w", err)
	}
	var errs []error
	for _, e := range entries {
		run := e.Name()
		// A DirEntry's type is the entry's own (Lstat): a symbolic link is
		// never a folder here.
		if !e.IsDir() || !journal.ValidRunID(run) {
			continue
		}
		dir := filepath.Join(parent, run)
		if _, err := os.Lstat(filepath.Join(dir, keptMarker)); err == nil {
			continue
		}
		executing, err := journal.IsLocked(journals, run)
		if err != nil || executing {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove abandoned scratch workspaces: %w", err)
	}
	return nil
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

// done ends a copy's use once its example has ended (passed, failed,
// cancelled or cut, after its last sent turn): it is unregistered, then removed, or kept with
// --keep-workspace, in which case its folder is returned.
func (a *scratchArea) done(w *workspace.Workspace, ref *sessionspb.WorkspaceRef) (kept string, err error) {
	a.reg.Drop(ref.GetKey())
	if a.keep {
		return w.Dir(), w.Close()
	}
	return "", w.Remove()
}
