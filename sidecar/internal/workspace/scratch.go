package workspace

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kmxdev/kmx/sidecar/internal/state"
	"github.com/kmxdev/kmx/sidecar/internal/workspacepath"
)

// Workspace is one example's private scratch copy of a fixture. Every tool
// call and every read of what changed goes through its os.Root, so nothing
// outside the copy is ever opened.
type Workspace struct {
	fixture *Fixture
	dir     string
	root    *os.Root
}

// Materialize copies the fixture into a new private folder under parent
// (which the caller made private: the state folder's workspace area). The
// folder is 0700 on unix (an owner-only DACL on windows), its files 0600.
// On any failure nothing is left behind.
func (f *Fixture) Materialize(parent string) (*Workspace, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("name a scratch workspace: %w", err)
	}
	name := "ws-" + hex.EncodeToString(b[:])
	if _, err := os.Lstat(filepath.Join(parent, name)); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("scratch workspace %s already exists", name)
	}
	dir, err := state.EnsurePrivateDir(parent, name)
	if err != nil {
		return nil, fmt.Errorf("create the scratch workspace: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("open the scratch workspace: %w", err)
	}
	w := &Workspace{fixture: f, dir: dir, root: root}
	for _, e := range f.entries {
		if e.dir {
			err = root.Mkdir(e.path, 0o700)
		} else {
			err = writeNew(root, e.path, e.data)
		}
		if err != nil {
			_ = w.Remove()
			return nil, fmt.Errorf("copy %s into the scratch workspace: %w", e.path, err)
		}
	}
	return w, nil
}

// writeNew creates p (which must not exist, not even as a link) with data.
func writeNew(root *os.Root, p string, data []byte) error {
	fh, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = fh.Write(data)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// Dir is the scratch folder's path (for --keep-workspace's message).
func (w *Workspace) Dir() string { return w.dir }

// Fixture is the fixture the copy was made from.
func (w *Workspace) Fixture() *Fixture { return w.fixture }

// Close releases the scratch folder and keeps it on disk (--keep-workspace).
func (w *Workspace) Close() error { return w.root.Close() }

// Remove releases the scratch folder and deletes it.
func (w *Workspace) Remove() error {
	_ = w.root.Close()
	if err := os.RemoveAll(w.dir); err != nil {
		return fmt.Errorf("remove the scratch workspace: %w", err)
	}
	return nil
}

// Bounds of what the journal keeps of a changed file.
const (
	// MaxJournaledFileBytes: a file side (before or after) over this is kept
	// by its hash only.
	MaxJournaledFileBytes = 64 << 10
	// MaxJournaledBytes: once the kept sides reach this, later ones are
	// kept by hash only.
	MaxJournaledBytes = 1 << 20
)

// Change kinds.
const (
	Added    = "added"
	Modified = "modified"
	Deleted  = "deleted"
)

// Change is one file that differs between the fixture and the scratch copy
// after the turn. Sides over the bounds keep their hash only (Content nil,
// Omitted set), and content assertions refuse them.
type Change struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	// NotRegular: the path is now something other than a regular file
	// (only a process outside kmx can do that); its content is unknown.
	NotRegular bool `json:"notRegular,omitempty"`
	// After: the final bytes (nil when deleted or not regular).
	Size    int64  `json:"size"`
	Hash    string `json:"hash,omitempty"`
	Content []byte `json:"content,omitempty"`
	Omitted bool   `json:"omitted,omitempty"`
	// Before: the fixture's bytes (nil when added).
	BeforeSize    int64  `json:"beforeSize,omitempty"`
	BeforeHash    string `json:"beforeHash,omitempty"`
	BeforeContent []byte `json:"beforeContent,omitempty"`
	BeforeOmitted bool   `json:"beforeOmitted,omitempty"`
}

// Changes compares the scratch copy with the fixture: every file added,
// modified or deleted, sorted by path. Folders are not files: a folder
// created or left empty is not a change.
func (w *Workspace) Changes() ([]Change, error) {
	now := map[string]*Change{}
	var paths []string
	err := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if p == "." || d.IsDir() {
			return nil
		}
		paths = append(paths, p)
		if !d.Type().IsRegular() {
			now[p] = &Change{Path: p, NotRegular: true}
			return nil
		}
		data, err := readRegular(w.root, p, MaxBytes+1<<20)
		if err != nil {
			now[p] = &Change{Path: p, NotRegular: true}
			// A file that vanished or turned into something else is reported as such.
			return nil
		}
		now[p] = &Change{Path: p, Content: data}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compare the scratch workspace with the fixture: %w", err)
	}
	var out []Change
	for _, p := range paths {
		c := now[p]
		before, had := w.fixture.File(p)
		switch {
		case c.NotRegular && had:
			c.Kind = Modified
		case c.NotRegular:
			c.Kind = Added
		case !had:
			c.Kind = Added
		case string(before) == string(c.Content):
			continue
		default:
			c.Kind = Modified
		}
		if had {
			c.BeforeContent = before
		}
		out = append(out, *c)
	}
	for _, e := range w.fixture.entries {
		if _, ok := now[e.path]; !ok && !e.dir {
			out = append(out, Change{Path: e.path, Kind: Deleted, BeforeContent: e.data})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	budget := int64(MaxJournaledBytes)
	keep := func(data []byte, content *[]byte, size *int64, hash *string, omitted *bool) {
		*size = int64(len(data))
		*hash = digest(data)
		if len(data) > MaxJournaledFileBytes || int64(len(data)) > budget {
			*content, *omitted = nil, true
			return
		}
		budget -= int64(len(data))
		*content = data
	}
	for i := range out {
		c := &out[i]
		if c.Kind != Added {
			keep(c.BeforeContent, &c.BeforeContent, &c.BeforeSize, &c.BeforeHash, &c.BeforeOmitted)
		}
		if c.Kind != Deleted && !c.NotRegular {
			keep(c.Content, &c.Content, &c.Size, &c.Hash, &c.Omitted)
		}
	}
	return out, nil
}

func digest(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

// resolved is a tool path checked inside the scratch copy.
type resolved struct {
	rel  string      // clean, slash-separated, "." for the root
	info fs.FileInfo // nil when it does not exist
}

// toolPathError is a path a tool call may not use: the model sees it.
type toolPathError struct{ msg string }

func (e *toolPathError) Error() string { return e.msg }

func pathErr(format string, a ...any) error { return &toolPathError{msg: fmt.Sprintf(format, a...)} }

// resolve checks a path a tool call gave: relative to the workspace root,
// no "..", and no symbolic link or special file on the way (each folder on
// the way is checked with Lstat inside the os.Root, so a link swapped in
// during the run is refused too; the os.Root keeps any open inside the copy
// even if one is swapped in between the check and the open). A missing
// final component (or missing folders on the way, when missingOK) is fine.
func (w *Workspace) resolve(p string, missingOK bool) (resolved, error) {
	p = strings.TrimSpace(p)
	switch {
	case p == "":
		return resolved{}, pathErr("no path was given: use a path relative to the workspace root, such as src/main.go")
	case strings.ContainsRune(p, 0) || !utf8Valid(p):
		return resolved{}, pathErr("%q is not a valid path", p)
	case strings.Contains(p, "://") || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.IsAbs(p) || workspacepath.HasDriveLetter(p):
		return resolved{}, pathErr("%q is an absolute path: kmx's test workspace takes paths relative to its root, such as src/main.go", p)
	case strings.Contains(p, `\`):
		return resolved{}, pathErr(`%q uses \ as a separator: write / between folder names`, p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return resolved{}, pathErr("%q goes through \"..\": paths must stay inside the workspace", p)
		}
	}
	rel := path.Clean(p)
	if rel == "." {
		fi, err := w.root.Lstat(".")
		if err != nil {
			return resolved{}, fmt.Errorf("check the workspace root: %w", err)
		}
		return resolved{rel: ".", info: fi}, nil
	}
	parts := strings.Split(rel, "/")
	prefix := ""
	for i, c := range parts {
		prefix = path.Join(prefix, c)
		fi, err := w.root.Lstat(prefix)
		last := i == len(parts)-1
		switch {
		case errors.Is(err, fs.ErrNotExist) && (last || missingOK):
			return resolved{rel: rel}, nil
		case errors.Is(err, fs.ErrNotExist):
			return resolved{}, pathErr("%s does not exist in the workspace", prefix)
		case err != nil:
			return resolved{}, pathErr("%s cannot be checked in the workspace", prefix)
		case fi.Mode()&fs.ModeSymlink != 0:
			return resolved{}, pathErr("%s is a symbolic link: the workspace tools never follow links", prefix)
		case last && !fi.IsDir() && !fi.Mode().IsRegular():
			return resolved{}, pathErr("%s is not a regular file or folder", prefix)
		case last:
			return resolved{rel: rel, info: fi}, nil
		case !fi.IsDir():
			return resolved{}, pathErr("%s is not a folder", prefix)
		}
	}
	return resolved{rel: rel}, nil
}

// Registry holds the scratch copies of one run's examples by key, for the
// harness that answers their tools (harness.Workspaces). A key is the
// copy's random folder name, never a path a caller could choose. It is
// safe for concurrent use.
type Registry struct {
	mu sync.Mutex
	m  map[string]*Workspace
}

// Add registers w and returns its key.
func (r *Registry) Add(w *Workspace) string {
	key := filepath.Base(w.dir)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*Workspace{}
	}
	r.m[key] = w
	return key
}

// Drop forgets the copy under key.
func (r *Registry) Drop(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, key)
}

// Workspace returns the copy registered under key.
func (r *Registry) Workspace(key string) (*Workspace, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.m[key]
	return w, ok && key != ""
}
