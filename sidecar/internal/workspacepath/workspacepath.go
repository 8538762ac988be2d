// Package workspacepath holds the rules for the paths that name a fixture
// workspace and the files in it, as an agent file writes them: clean,
// relative, slash-separated, printable, no "..". The agent-file parser
// (refusing a bad path where it is written) and package workspace (before
// touching the disk) both apply these, so the two can never disagree.
package workspacepath

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckDir checks a fixture folder as written, relative to the agent
// file's folder. It returns what is wrong and what to change, both empty
// when the path is fine.
func CheckDir(rel string) (problem, fix string) {
	switch {
	case rel == "":
		return "is empty", "name a folder beside the agent file, such as fixtures/app"
	case strings.ContainsRune(rel, 0) || !utf8.ValidString(rel):
		return "is not a valid path", "name a folder beside the agent file, such as fixtures/app"
	case strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.IsAbs(rel) || filepath.VolumeName(rel) != "" || HasDriveLetter(rel):
		return "is an absolute path", "write it relative to the agent file's folder, such as fixtures/app"
	case strings.Contains(rel, `\`):
		return `uses \ as a separator`, "write / between folder names, such as fixtures/app"
	}
	for _, c := range strings.Split(rel, "/") {
		if c == ".." {
			return `goes through ".."`, "keep the fixture inside the agent file's folder: move it there and name it relative to it"
		}
	}
	if path.Clean(rel) != rel {
		return "is not a clean path", fmt.Sprintf("write it as %q", path.Clean(rel))
	}
	return "", ""
}

// CheckFile checks a file path in a workspace as an assertion writes it,
// relative to the workspace root. The error says what is wrong and what
// to change, to follow the path in a message.
func CheckFile(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("is empty: name a file in the workspace, such as src/main.go")
	case strings.ContainsRune(p, 0) || !Printable(p):
		return fmt.Errorf("is not a valid path")
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || HasDriveLetter(p) || strings.Contains(p, "://"):
		return fmt.Errorf("is an absolute path: write it relative to the workspace root, such as src/main.go")
	case strings.Contains(p, `\`):
		return fmt.Errorf(`uses \ as a separator: write / between folder names`)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return fmt.Errorf(`goes through "..": name a file inside the workspace`)
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("is not a clean path: write it as %q", path.Clean(p))
	}
	return nil
}

// Printable reports whether p is valid UTF-8 of printable characters (no
// line break, tab or control character), so a path can be written on one
// line of a digest or a message unambiguously.
func Printable(p string) bool {
	if !utf8.ValidString(p) {
		return false
	}
	for _, r := range p {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// HasDriveLetter reports whether p starts with a Windows drive ("C:").
func HasDriveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && (p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}
