// Package state owns kmx's state folder: where it lives on each OS, and the
// rule that every directory and file kmx keeps there is private to the
// current user from the moment it is created. It creates what is missing and
// refuses, never repairs, an existing object that is broader, foreign or
// redirected (a symlink, junction or other reparse point).
//
// It never decides what goes inside the folder (the journal and the failure
// store own their files) and it never judges the user's own folders above the
// state root, such as ~/.config.
package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// UnsafeError is an existing state path that kmx refuses to use. It names the
// path, what is wrong with it and how to fix it, so the CLI can show it as a
// refusal. kmx never repairs the path itself: a broader mode may be a choice
// the user made, and silently narrowing it would hide that the folder was
// exposed.
type UnsafeError struct {
	Path    string
	Problem string // e.g. "has mode 0755: group or others can open it"
	Fix     string // one sentence saying what to do
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("refusing state path %s: it %s; %s", e.Path, e.Problem, e.Fix)
}

// NextStep is the fix (problem.Problem).
func (e *UnsafeError) NextStep() string { return e.Fix }

// Dir returns the kmx state directory for goos, reading the environment only
// through getenv so it can be tested for every OS from any OS.
//
// KMX_HOME wins when set and must be absolute. Otherwise: Linux and other
// unix use $XDG_CONFIG_HOME/kmx (a relative XDG_CONFIG_HOME is ignored, as the
// XDG spec requires) or $HOME/.config/kmx; darwin uses
// $HOME/Library/Application Support/kmx; windows uses %LOCALAPPDATA%\kmx,
// which is machine-local and does not roam with a domain profile.
func Dir(getenv func(string) string, goos string) (string, error) {
	win := goos == "windows"
	if h := getenv("KMX_HOME"); h != "" {
		if !isAbs(h, win) {
			return "", fmt.Errorf("KMX_HOME is %q, which is not an absolute path: set KMX_HOME to an absolute folder such as %s", h, exampleAbs(win))
		}
		if win && isUNC(h) {
			return "", fmt.Errorf("KMX_HOME is %q, a network (UNC) path: kmx keeps state only on a local disk; set KMX_HOME to a folder on a local NTFS drive", h)
		}
		return clean(h, win), nil
	}
	switch goos {
	case "windows":
		l := getenv("LOCALAPPDATA")
		if l == "" || !isAbs(l, true) {
			return "", fmt.Errorf("LOCALAPPDATA is %q, not an absolute path: kmx keeps its state in %%LOCALAPPDATA%%\\kmx; set LOCALAPPDATA, or set KMX_HOME to an absolute local folder", l)
		}
		if isUNC(l) {
			return "", fmt.Errorf("LOCALAPPDATA is %q, a network (UNC) path: kmx keeps state only on a local disk; set KMX_HOME to a folder on a local NTFS drive", l)
		}
		return clean(l, true) + `\kmx`, nil
	case "darwin":
		home, err := homeDir(getenv)
		if err != nil {
			return "", err
		}
		return path.Join(home, "Library", "Application Support", "kmx"), nil
	default:
		if x := getenv("XDG_CONFIG_HOME"); x != "" && isAbs(x, false) {
			return path.Join(x, "kmx"), nil
		}
		home, err := homeDir(getenv)
		if err != nil {
			return "", err
		}
		return path.Join(home, ".config", "kmx"), nil
	}
}

func homeDir(getenv func(string) string) (string, error) {
	h := getenv("HOME")
	if h == "" || !isAbs(h, false) {
		return "", fmt.Errorf("HOME is %q, not an absolute path, so kmx cannot find its state folder: set HOME, or set KMX_HOME to an absolute folder", h)
	}
	return path.Clean(h), nil
}

// isAbs is filepath.IsAbs for a target OS that may differ from the host's.
func isAbs(p string, win bool) bool {
	if !win {
		return strings.HasPrefix(p, "/")
	}
	if isUNC(p) {
		return true
	}
	return len(p) >= 3 && isLetter(p[0]) && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}

func isUNC(p string) bool {
	return len(p) >= 2 && (p[0] == '\\' || p[0] == '/') && (p[1] == '\\' || p[1] == '/')
}

func isLetter(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

func clean(p string, win bool) string {
	if !win {
		return path.Clean(p)
	}
	// Clean with forward slashes, then give Windows its own separator back.
	c := path.Clean(strings.ReplaceAll(p, `\`, "/"))
	return strings.ReplaceAll(c, "/", `\`)
}

func exampleAbs(win bool) string {
	if win {
		return `C:\Users\me\kmx`
	}
	return "/home/me/.kmx"
}

// EnsurePrivateDir makes root and each sub component below it exist as
// directories private to the current user, and returns root joined with sub.
//
// A missing component is created private from the first instant (0700 on
// unix; a protected owner-only DACL on windows) and then checked, since a
// umask can only remove bits and a filesystem may ignore them. An existing
// component that is a symlink or other redirect, not a directory, not owned
// by the current user, or reachable by group or others is refused with an
// *UnsafeError; it is never repaired.
//
// The parents of root belong to the user: missing ones are created (0700)
// but their modes are not judged.
func EnsurePrivateDir(root string, sub ...string) (string, error) {
	if !filepath.IsAbs(root) {
		return "", fmt.Errorf("state root %q is not an absolute path: set KMX_HOME to an absolute folder", root)
	}
	root = filepath.Clean(root)
	for _, s := range sub {
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`) || filepath.VolumeName(s) != "" {
			return "", fmt.Errorf("state sub-folder %q is not a single folder name", s)
		}
	}
	if parent := filepath.Dir(root); parent != root {
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return "", fmt.Errorf("create the parents of state folder %s: %w", root, err)
		}
	}
	p := root
	if err := ensureOne(p); err != nil {
		return "", err
	}
	for _, s := range sub {
		p = filepath.Join(p, s)
		if err := ensureOne(p); err != nil {
			return "", err
		}
	}
	return p, nil
}

func ensureOne(p string) error {
	err := mkdirPrivate(p)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		// Someone (maybe an earlier kmx) made it: judge it like any existing one.
	default:
		return fmt.Errorf("create private state folder %s: %w", p, err)
	}
	return CheckPrivateDir(p)
}

// CheckPrivateDir checks, without creating anything, that p is a directory
// private to the current user. A missing p is reported as an error wrapping
// fs.ErrNotExist; an unsafe one as *UnsafeError.
func CheckPrivateDir(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("check state folder: %w", err)
	}
	return checkDir(p, fi)
}

// CheckReadableDir is CheckPrivateDir for a reader: it also accepts a
// private folder the user made read-only (0500 on unix), since reading
// never exposes what is in it. A folder that group or others can open is
// refused as by CheckPrivateDir; only a writer needs 0700.
func CheckReadableDir(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("check state folder: %w", err)
	}
	return checkDirReadable(p, fi)
}

// CheckReadableFile is CheckPrivateFile for a reader: it also accepts a
// private file the user made read-only (0400 on unix).
func CheckReadableFile(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("check state file: %w", err)
	}
	return checkFileReadable(p, fi)
}

// CheckPrivateFile checks, without creating or opening it, that p is a
// regular file private to the current user (0600 or narrower on unix). A
// missing p is reported as an error wrapping fs.ErrNotExist; an unsafe one as
// *UnsafeError.
func CheckPrivateFile(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("check state file: %w", err)
	}
	return checkFile(p, fi)
}

// CreatePrivateFile creates p, which must not exist yet (not even as a
// symlink), private to the current user from creation, opened read-write.
func CreatePrivateFile(p string) (*os.File, error) {
	f, err := createPrivate(p)
	if err != nil {
		return nil, fmt.Errorf("create private state file: %w", err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkFile(p, fi)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(p)
		return nil, err
	}
	return f, nil
}

func unsafeKind(p, what string) *UnsafeError {
	return &UnsafeError{
		Path:    p,
		Problem: what,
		Fix:     "move it aside and let kmx create a private one, or set KMX_HOME to a private folder",
	}
}
