package invocation

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// planWorkspaces is the workspace part of a Plan: each fixture the selected
// examples name, read once at planning (workspace.Load), and which example
// runs in which. Empty when no selected example names a workspace.
type planWorkspaces struct {
	fixtures map[string]*workspace.Fixture
	of       map[string]string
}

// prepareWorkspaces reads every fixture a selected example names (the agent
// file's folder is where DIR is resolved), refusing, before anything is
// created or sent, a fixture workspace.Load refuses and an example with a
// workspace on a file that declares no tools. Each example with one gets
// its workspace tools (read/readFile, search/..., edit/...) answered by its
// scratch copy: their source becomes workspace.
//
// A re-grade (opts.Regrade) needs no fixture: its examples are judged from
// the source run's journal. It reads one that is there only to learn its
// hash, so that a re-grade refuses an example whose fixture changed since
// the source run; an absent or unreadable fixture is not refused there.
func prepareWorkspaces(opts Options, req Request, plan *Plan) error {
	plan.workspaces = planWorkspaces{fixtures: map[string]*workspace.Fixture{}, of: map[string]string{}}
	for _, ex := range plan.Selected {
		dir := plan.Agent.WorkspaceOf(ex)
		if dir == "" {
			continue
		}
		at := ex.WorkspaceRange
		if ex.Workspace == "" {
			at = plan.Agent.WorkspaceRange
		}
		if len(plan.Agent.Tools) == 0 {
			return refuseAt(at, "declare the tools the agent works with (such as read/readFile and edit/editFiles, or the sets read, search and edit), or remove `workspace:`",
				"example %q names the workspace %q, but the agent file declares no tools: nothing could read or edit it", ex.ID, dir)
		}
		if req.CheckWorkspace != nil {
			if err := req.CheckWorkspace(filepath.Join(filepath.Dir(req.Path), filepath.FromSlash(dir))); err != nil {
				r := RefuseIn(func(w problem.Words) string {
					return "keep the fixture beside the agent file inside the folders this caller may read (for kmx mcp: its roots, or start it with " + w(problem.Root, "FOLDER") + " for the folder that holds both)"
				}, nil, "example %q: %s", ex.ID, err.Error())
				r.At = &at
				return r
			}
		}
		if _, ok := plan.workspaces.fixtures[dir]; !ok {
			f, err := workspace.Load(filepath.Dir(req.Path), dir)
			switch {
			case err == nil:
				plan.workspaces.fixtures[dir] = f
			case opts.Regrade:
			default:
				var we *workspace.Error
				if errors.As(err, &we) {
					return refuseAt(at, we.NextStep(), "example %q: %s", ex.ID, we.Error())
				}
				return fmt.Errorf("read the workspace %q: %w", dir, err)
			}
		}
		plan.workspaces.of[ex.ID] = dir
		set := plan.tools.sets[ex.ID]
		for i, t := range set {
			if t.State == localtools.Enabled && workspace.Answers(t.Name) {
				set[i].Source, set[i].Recorded, set[i].Pending = localtools.SourceWorkspace, nil, false
			}
		}
	}
	return nil
}

// Workspace is the fixture example id runs in, or nil.
func (p *Plan) Workspace(id string) *workspace.Fixture {
	if dir, ok := p.workspaces.of[id]; ok {
		return p.workspaces.fixtures[dir]
	}
	return nil
}

// WorkspaceDir is the fixture folder example id names, or "" (also on a
// re-grade, which reads no fixture).
func (p *Plan) WorkspaceDir(id string) string { return p.workspaces.of[id] }

// HasWorkspaces reports whether any selected example runs in a workspace.
func (p *Plan) HasWorkspaces() bool { return len(p.workspaces.of) > 0 }

// AssertedPaths is the paths a turn's content assertions name, whose
// state after the turn its workspace outcome keeps.
func AssertedPaths(assertions []agentfile.Assertion) []string {
	var out []string
	for _, a := range assertions {
		switch a.Type {
		case agentfile.FileContains, agentfile.FileNotContains, agentfile.FileMatches:
			out = append(out, a.Operands().Path)
		}
	}
	return out
}

// workspacesRevision folds each fixture's content hash into a settings
// revision, so a result is out of date once a fixture changes even when
// the agent file and kmx.yaml do not.
func (p *Plan) workspacesRevision(rev string) string {
	if len(p.workspaces.fixtures) == 0 {
		return rev
	}
	dirs := make([]string, 0, len(p.workspaces.fixtures))
	for d := range p.workspaces.fixtures {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", rev)
	for _, d := range dirs {
		fmt.Fprintf(h, "workspace %q %s\n", d, p.workspaces.fixtures[d].Hash)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
