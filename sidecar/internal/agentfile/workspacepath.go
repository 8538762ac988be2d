package agentfile

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The path checks of `workspace:` and of the file assertions, written
// where the file is: the same rules package workspace applies on disk
// (workspace.CheckPath, workspace.CheckFilePath; agentfile sits on the
// same layer, so it cannot import it), held together by tests on both
// sides.

// checkWorkspaceDir checks a fixture folder as written.
func checkWorkspaceDir(rel string) error {
	bad := func(problem, fix string) error { return fmt.Errorf("workspace %q %s; %s", rel, problem, fix) }
	switch {
	case rel == "":
		return bad("is empty", "name a folder beside the agent file, such as fixtures/app")
	case strings.ContainsRune(rel, 0) || !utf8.ValidString(rel):
		return bad("is not a valid path", "name a folder beside the agent file, such as fixtures/app")
	case strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.IsAbs(rel) || filepath.VolumeName(rel) != "" || driveLetter(rel):
		return bad("is an absolute path", "write it relative to the agent file's folder, such as fixtures/app")
	case strings.Contains(rel, `\`):
		return bad(`uses \ as a separator`, "write / between folder names, such as fixtures/app")
	}
	for _, c := range strings.Split(rel, "/") {
		if c == ".." {
			return bad(`goes through ".."`, "keep the fixture inside the agent file's folder: move it there and name it relative to it")
		}
	}
	if path.Clean(rel) != rel {
		return bad("is not a clean path", fmt.Sprintf("write it as %q", path.Clean(rel)))
	}
	return nil
}

// checkWorkspaceFile checks a workspace file path as an assertion writes it.
func checkWorkspaceFile(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("is empty: name a file in the workspace, such as src/main.go")
	case strings.ContainsRune(p, 0) || !printable(p):
		return fmt.Errorf("is not a valid path")
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || driveLetter(p) || strings.Contains(p, "://"):
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

func driveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && (p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}

func printable(p string) bool {
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
