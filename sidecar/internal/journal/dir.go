package journal

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// ExistingDir finds the journal folder of the state folder the environment
// names, without creating anything: listing, clearing and replaying never
// create state. exists is false when the folder (or one above it) is not
// there yet. A state folder kmx cannot find, or one that is a symlink,
// someone else's or readable by others, is an error carrying its next step
// (problem.Problem). Every front finds the journal folder here.
func ExistingDir(getenv func(string) string, goos string) (dir string, exists bool, err error) {
	root, err := state.Dir(getenv, goos)
	if err != nil {
		return "", false, problem.Wrap(err, problem.SetKMXHome)
	}
	dir = Dir(root)
	for _, p := range []string{root, filepath.Dir(dir), dir} {
		if err := state.CheckPrivateDir(p); err != nil {
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

// ListAgent is List narrowed to the runs of one agent ID ("" keeps every
// run), oldest first. Every front that shows a file's runs lists them here.
func ListAgent(dir, agentID string) ([]RunInfo, error) {
	runs, err := List(dir)
	if err != nil || agentID == "" {
		return runs, err
	}
	out := runs[:0]
	for _, r := range runs {
		if r.AgentID == agentID {
			out = append(out, r)
		}
	}
	return out, nil
}
