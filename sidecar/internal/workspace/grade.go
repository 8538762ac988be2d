package workspace

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/workspacepath"
)

// FileState is one file's state after the turn, as the journal keeps it for
// the file assertions: whether it exists as a regular file, its size and
// hash, and its bytes when they fit the bounds (Omitted otherwise).
type FileState struct {
	Path    string `json:"path"`
	Exists  bool   `json:"exists"`
	Size    int64  `json:"size,omitempty"`
	Hash    string `json:"hash,omitempty"`
	Content []byte `json:"content,omitempty"`
	Omitted bool   `json:"omitted,omitempty"`
	// NotRegular: the path is a folder or something other than a file.
	NotRegular bool `json:"notRegular,omitempty"`
}

// Outcome is what the file assertions are judged from: every change, and
// the final state of each path a content assertion names. It is what the
// journal keeps, so a replay judges without the fixture or the copy.
type Outcome struct {
	Changes []Change    `json:"changes"`
	Files   []FileState `json:"files,omitempty"`
}

// Outcome reads the changes and the final state of paths (the paths the
// example's content assertions name), bounded as Changes is.
func (w *Workspace) Outcome(paths []string) (Outcome, error) {
	changes, err := w.Changes()
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Changes: changes}
	seen := map[string]bool{}
	budget := int64(MaxJournaledBytes)
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		fs := FileState{Path: p}
		r, err := w.resolve(p, false)
		switch {
		case err != nil:
			fs.NotRegular = true
		case r.info == nil:
		case !r.info.Mode().IsRegular():
			fs.NotRegular = true
		default:
			data, err := readRegular(w.root, r.rel, MaxBytes+1<<20)
			if err != nil {
				fs.NotRegular = true
				break
			}
			fs.Exists, fs.Size, fs.Hash = true, int64(len(data)), digest(data)
			if len(data) > MaxJournaledFileBytes || int64(len(data)) > budget {
				fs.Omitted = true
			} else {
				budget -= int64(len(data))
				fs.Content = data
			}
		}
		out.Files = append(out.Files, fs)
	}
	return out, nil
}

// Assertion kinds judged from an Outcome.
const (
	FileContains    = "fileContains"
	FileNotContains = "fileNotContains"
	FileMatches     = "fileMatches"
	FileUnchanged   = "fileUnchanged"
	FilesChanged    = "filesChanged"
)

// Verdicts of Judge.
const (
	Pass    = "pass"
	Fail    = "fail"
	Unknown = "unknown"
)

// Judge judges one file assertion from an Outcome: pass or fail with what
// was seen, or unknown when the outcome cannot say (a file kept by hash
// only, or not recorded).
func Judge(kind, path, operand string, paths []string, o Outcome) (verdict, message string) {
	switch kind {
	case FileUnchanged:
		for _, c := range o.Changes {
			if c.Path == path {
				return Fail, fmt.Sprintf("%s was %s", path, c.Kind)
			}
		}
		return Pass, path + " is unchanged"
	case FilesChanged:
		var got []string
		for _, c := range o.Changes {
			got = append(got, c.Path)
		}
		want := append([]string(nil), paths...)
		sort.Strings(want)
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			return Pass, fmt.Sprintf("exactly %d files changed", len(got))
		}
		return Fail, fmt.Sprintf("changed: [%s]; expected exactly: [%s]", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	var fs *FileState
	for i := range o.Files {
		if o.Files[i].Path == path {
			fs = &o.Files[i]
		}
	}
	switch {
	case fs == nil:
		// Only a re-grade gets here: a run records every path its content
		// assertions name, so this one was added since the source ran.
		return Unknown, path + " was not recorded after the turn: the journal keeps the final content only of the files the example's content assertions named when it ran; test the example again to judge a new one"
	case fs.NotRegular:
		return Fail, path + " is not a regular file after the turn"
	case !fs.Exists:
		return Fail, path + " does not exist after the turn"
	case fs.Omitted:
		return Unknown, fmt.Sprintf("%s is %d bytes, over the %d KiB kmx keeps of a file: its content is recorded by hash only (%s), so %s cannot be judged; assert on a smaller file", path, fs.Size, MaxJournaledFileBytes>>10, fs.Hash, kind)
	}
	text := string(fs.Content)
	switch kind {
	case FileContains:
		if strings.Contains(text, operand) {
			return Pass, path + " contains the text"
		}
		return Fail, path + " does not contain the text"
	case FileNotContains:
		if !strings.Contains(text, operand) {
			return Pass, path + " does not contain the text"
		}
		return Fail, path + " contains the text"
	case FileMatches:
		re, err := regexp.Compile(operand)
		if err != nil {
			return Unknown, "the pattern does not compile"
		}
		if re.MatchString(text) {
			return Pass, path + " matches the pattern"
		}
		return Fail, path + " does not match the pattern"
	}
	return Unknown, "unknown file assertion " + kind
}

// CheckFilePath checks a workspace file path as an assertion writes it:
// clean, relative to the workspace root, slash-separated, no "..".
func CheckFilePath(p string) error { return workspacepath.CheckFile(p) }
