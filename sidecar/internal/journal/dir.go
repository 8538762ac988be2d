package journal

import (
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// ExistingDir finds the journal folder of the state folder the environment
// names, without creating anything: listing, clearing and replaying never
// create state. exists is false when the folder (or one above it) is not
// there yet. A private folder the user made read-only is accepted: its
// runs are read, and only a writer refuses it. A state folder kmx cannot
// find, or one that is a symlink, someone else's or readable by others, is
// an error carrying its next step
// (problem.Problem). Every front finds the journal folder here.
func ExistingDir(getenv func(string) string, goos string) (dir string, exists bool, err error) {
	root, err := state.Dir(getenv, goos)
	if err != nil {
		return "", false, problem.Wrap(err, problem.SetKMXHome)
	}
	dir = Dir(root)
	for _, p := range []string{root, filepath.Dir(dir), dir} {
		if err := state.CheckReadableDir(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return dir, false, nil
			}
			var unsafe *state.UnsafeError
			if errors.As(err, &unsafe) {
				return "", false, err
			}
			return "", false, problem.Wrap(err, "check the state folder (KMX_HOME), then try again")
		}
	}
	return dir, true, nil
}

// ListAgent is List narrowed to the runs of one agent (RunInfo.Of): its
// ID ("" keeps every run) and the path of its file (PathKey; "" matches
// any). Oldest first. Every front that shows a file's runs lists them
// here.
func ListAgent(dir, agentID, agentPath string) ([]RunInfo, error) {
	runs, err := List(dir)
	if err != nil || agentID == "" {
		return runs, err
	}
	out := runs[:0]
	for _, r := range runs {
		if r.Of(agentID, agentPath) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Of reports whether the run was of the agent agentID in the file
// agentPath (a PathKey): the same ID, and the same file when both the run
// and the caller know it. Two files with the same name in different
// folders share an ID but not a path, so neither sees the other's runs.
// A run that recorded no path (kmx wrote it before it kept paths) is
// matched by its ID alone.
func (r RunInfo) Of(agentID, agentPath string) bool {
	return r.AgentID == agentID && SamePath(r.AgentPath, agentPath)
}

// SamePath reports whether two agent paths (PathKey) name one file; an
// empty path is unknown and matches any. Windows and macOS file systems
// ignore case by default, so there the comparison does too.
func SamePath(a, b string) bool {
	switch {
	case a == "" || b == "" || a == b:
		return true
	case runtime.GOOS == "windows" || runtime.GOOS == "darwin":
		return strings.EqualFold(a, b)
	}
	return false
}

// PathKey is the path a journal records for an agent file: absolute, clean
// and with symlinks resolved when they can be, so the command line (a path
// relative to where it runs), the editor (a file URI) and MCP (an absolute
// path) name one file alike. "" stays "".
func PathKey(path string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}
