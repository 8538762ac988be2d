package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/secrets"
	"github.com/kmxdev/kmx/sidecar/internal/workspacepath"
)

// Bounds of a fixture (issue 27).
const (
	// MaxFiles is the most regular files a fixture may hold.
	MaxFiles = 2000
	// MaxBytes is the most bytes a fixture's files may hold together.
	MaxBytes = 16 << 20
)

// Error is a fixture refused before anything is created or sent: what is
// wrong, where, and what to change.
type Error struct {
	// Fixture is the fixture as written (relative to the agent's folder).
	Fixture string
	Problem string
	Fix     string
}

func (e *Error) Error() string {
	return fmt.Sprintf("workspace %q %s; %s", e.Fixture, e.Problem, e.Fix)
}

// NextStep is what to change.
func (e *Error) NextStep() string { return e.Fix }

// Fixture is a fixture folder read whole into memory: every example's
// scratch copy is made from these bytes, so the copy is exactly what Hash
// names even if the folder changes during the run.
type Fixture struct {
	// Rel is the fixture as written in the agent file (slash-separated,
	// relative to the agent's physical folder).
	Rel string
	// Hash is "sha256:" and the hex digest of the fixture's folders, file
	// names and contents (see hashEntries).
	Hash string
	// Files and Bytes count the regular files and their bytes.
	Files int
	Bytes int64
	// entries are sorted by path; folders have nil data and dir set.
	entries []entry
}

type entry struct {
	path string // slash-separated, relative to the fixture root
	dir  bool
	data []byte
}

// CheckPath checks a fixture path as written, without touching the disk: a
// clean, relative, slash-separated path with no ".." component. The agent
// file's parser uses it to refuse a bad path where it is written.
func CheckPath(rel string) error {
	if problem, fix := workspacepath.CheckDir(rel); problem != "" {
		return &Error{Fixture: rel, Problem: problem, Fix: fix}
	}
	return nil
}

// Load reads the fixture rel, relative to agentDir (the folder of the
// agent's physical file), whole into memory. It refuses, with an *Error
// saying what to change: a path CheckPath refuses; a fixture or any folder
// on the way to it that is a symbolic link or not a folder; a symbolic link,
// device, pipe or socket anywhere inside (kmx copies regular files and
// folders only); a name that is not printable UTF-8; more than MaxFiles
// files or MaxBytes bytes; and a file holding a credential-shaped value (a
// tool result with one would fail the turn). Nothing is written.
func Load(agentDir, rel string) (*Fixture, error) {
	if err := CheckPath(rel); err != nil {
		return nil, err
	}
	bad := func(problem, fix string) error { return &Error{Fixture: rel, Problem: problem, Fix: fix} }
	top, err := os.OpenRoot(agentDir)
	if err != nil {
		return nil, fmt.Errorf("open the agent file's folder: %w", err)
	}
	defer top.Close()
	// Every folder on the way, and the fixture itself, must be a real folder.
	prefix := ""
	for _, c := range strings.Split(rel, "/") {
		if c == "." {
			continue
		}
		prefix = path.Join(prefix, c)
		fi, err := top.Lstat(prefix)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, bad("does not exist", fmt.Sprintf("create the folder %s beside the agent file, or correct the path", prefix))
		case err != nil:
			return nil, fmt.Errorf("workspace %q: check %s: %w", rel, prefix, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, bad(fmt.Sprintf("goes through the symbolic link %s", prefix), "kmx never follows a link to a fixture: move the real folder there")
		case !fi.IsDir():
			return nil, bad(fmt.Sprintf("names %s, which is not a folder", prefix), "name a folder")
		}
	}
	root, err := top.OpenRoot(rel)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: open it: %w", rel, err)
	}
	defer root.Close()
	f := &Fixture{Rel: rel}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if p == "." {
			return nil
		}
		if !workspacepath.Printable(p) {
			return bad(fmt.Sprintf("holds %q, a name that is not printable UTF-8", p), "rename it: kmx reports paths in text")
		}
		t := d.Type()
		switch {
		case t&fs.ModeSymlink != 0:
			return bad(fmt.Sprintf("holds the symbolic link %s", p), "kmx copies regular files and folders only: replace the link with a copy of what it points to")
		case t.IsDir():
			f.entries = append(f.entries, entry{path: p, dir: true})
			return nil
		case !t.IsRegular():
			return bad(fmt.Sprintf("holds %s, which is not a regular file (%s)", p, t.Type()), "kmx copies regular files and folders only: remove it")
		}
		f.Files++
		if f.Files > MaxFiles {
			return bad(fmt.Sprintf("holds more than %d files", MaxFiles), "keep only the files the examples need")
		}
		data, err := readRegular(root, p, MaxBytes-f.Bytes)
		if errors.Is(err, errTooBig) {
			return bad(fmt.Sprintf("holds more than %d MiB", MaxBytes>>20), "keep only the files the examples need, or shrink the large ones")
		}
		if err != nil {
			return bad(fmt.Sprintf("could not be read at %s (%v)", p, err), "make it a readable regular file")
		}
		f.Bytes += int64(len(data))
		if found := secrets.Scan(string(data)); len(found) > 0 {
			return bad(fmt.Sprintf("holds a credential-shaped value (%s) in %s", found[0].Shape, p), "remove it from the fixture: a tool result that carries one fails the turn")
		}
		f.entries = append(f.entries, entry{path: p, data: data})
		return nil
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, e
		}
		return nil, fmt.Errorf("workspace %q: %w", rel, err)
	}
	sort.Slice(f.entries, func(i, j int) bool { return f.entries[i].path < f.entries[j].path })
	f.Hash = hashEntries(f.entries)
	return f, nil
}

var errTooBig = errors.New("over the size bound")

// readRegular reads the regular file p inside root, refusing it when it is
// (or became) anything else, or holds more than limit bytes.
func readRegular(root *os.Root, p string, limit int64) ([]byte, error) {
	before, err := root.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, errNotRegular
	}
	if before.Size() > limit {
		return nil, errTooBig
	}
	fh, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	after, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	// The file opened must be the one checked: a link swapped in between
	// the check and the open is refused, never followed.
	if !after.Mode().IsRegular() || !os.SameFile(before, after) {
		return nil, errNotRegular
	}
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooBig
	}
	return data, nil
}

var errNotRegular = errors.New("not a regular file")

// hashEntries digests a sorted tree: a version line, then per entry "D
// PATH\n" for a folder or "F PATH SIZE\n" and the bytes for a file. Names
// hold no line break (workspacepath.Printable), so the encoding is unambiguous.
func hashEntries(entries []entry) string {
	h := sha256.New()
	_, _ = io.WriteString(h, "kmx-workspace-v1\n")
	for _, e := range entries {
		if e.dir {
			_, _ = io.WriteString(h, "D "+e.path+"\n")
			continue
		}
		_, _ = io.WriteString(h, "F "+e.path+" "+strconv.Itoa(len(e.data))+"\n")
		_, _ = h.Write(e.data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// File returns the fixture's bytes of the file p (slash-separated), and
// whether it has one.
func (f *Fixture) File(p string) ([]byte, bool) {
	i := sort.Search(len(f.entries), func(i int) bool { return f.entries[i].path >= p })
	if i < len(f.entries) && f.entries[i].path == p && !f.entries[i].dir {
		return f.entries[i].data, true
	}
	return nil, false
}
