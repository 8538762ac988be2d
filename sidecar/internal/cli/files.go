package cli

import (
	"errors"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// fileSet is the agent files a command was given, after folders were
// expanded and a shard picked.
type fileSet struct {
	paths []string
	// many: the command names a folder, several files or a shard, so its
	// output is the combined form (one report per file) even when only one
	// file is left.
	many bool
}

// agentFiles expands a command's positional arguments: a file stands for
// itself, a folder for every *.agent.md under it (sorted, hidden folders
// and node_modules skipped) and every .md directly in a .github/agents
// folder under it (where VS Code keeps custom agents). --shard K/N then
// keeps a stable subset: the files whose path, relative to the root of
// their git work tree (outside git, to the folder given), hashes to K of
// N, so adding a file never moves the others between the machines of a CI
// matrix, and `.`, `ci` or an absolute path pick the same files.
func agentFiles(cmd string, args []string, shard, usage string) (fileSet, error) {
	if len(args) == 0 {
		return fileSet{}, usagef(usage, "kmx %s: name at least one agent file or folder", cmd)
	}
	set := fileSet{many: len(args) > 1 || shard != ""}
	seen := map[string]bool{}
	// base is the folder a path was found under (the folder argument, or
	// the file's own folder), for the shard key outside git.
	base := map[string]string{}
	add := func(p, under string) {
		if !seen[p] {
			seen[p] = true
			set.paths = append(set.paths, p)
			base[p] = under
		}
	}
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil || !fi.IsDir() {
			add(a, filepath.Dir(a)) // read (and refused if unreadable) like any file
			continue
		}
		set.many = true
		found, err := agentFilesUnder(a)
		if err != nil {
			return fileSet{}, usagef("check the folder; kmx reads *.agent.md files under it", "kmx %s: cannot list %s: %v", cmd, a, problem.PathReason(err))
		}
		if len(found) == 0 {
			return fileSet{}, usagef("name a folder that holds *.agent.md files (or .github/agents/*.md), or the files themselves", "kmx %s: %s holds no *.agent.md file and no .github/agents/*.md", cmd, a)
		}
		for _, p := range found {
			add(p, a)
		}
	}
	if shard != "" {
		k, n, err := parseShard(shard)
		if err != nil {
			return fileSet{}, usagef("give --shard K/N with 1 <= K <= N, for example --shard 2/4", "kmx %s: --shard %s: %v", cmd, shard, err)
		}
		roots := map[string]string{}
		var kept []string
		for _, p := range set.paths {
			if shardOf(shardKey(p, base[p], roots), n) == k {
				kept = append(kept, p)
			}
		}
		set.paths = kept
	}
	return set, nil
}

// agentFilesUnder lists the agent files under dir: every *.agent.md in a
// folder that is not hidden or node_modules, and every .md directly in a
// .github/agents folder (VS Code reads each as a custom agent). Other
// folders under .github, and other hidden folders, are skipped.
func agentFilesUnder(dir string) ([]string, error) {
	var out []string
	inAgents := func(p string) bool { return isGitHubAgents(p) || (p == dir && isGitHubAgents(absOrSelf(dir))) }
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch {
			case p == dir:
			case inAgents(filepath.Dir(p)):
				return filepath.SkipDir // VS Code reads only the files directly in it
			case d.Name() == ".github":
				// Entered only for its agents folder.
			case filepath.Base(filepath.Dir(p)) == ".github" && d.Name() == "agents":
			case filepath.Base(filepath.Dir(p)) == ".github",
				strings.HasPrefix(d.Name(), "."), d.Name() == "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		switch {
		case strings.HasSuffix(d.Name(), ".agent.md"):
			if inAgents(filepath.Dir(p)) || !underGitHub(dir, p) {
				out = append(out, p)
			}
		case strings.HasSuffix(d.Name(), ".md") && inAgents(filepath.Dir(p)):
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// isGitHubAgents reports whether the folder p is a .github/agents folder.
func isGitHubAgents(p string) bool {
	return filepath.Base(p) == "agents" && filepath.Base(filepath.Dir(p)) == ".github"
}

// underGitHub reports whether p lies directly in a .github folder under
// dir (not in its agents folder): such files are not agents.
func underGitHub(dir, p string) bool {
	return p != dir && filepath.Base(filepath.Dir(p)) == ".github"
}

func absOrSelf(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func parseShard(s string) (k, n int, err error) {
	ks, ns, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, errors.New("not of the form K/N")
	}
	k, kerr := strconv.Atoi(ks)
	n, nerr := strconv.Atoi(ns)
	if kerr != nil || nerr != nil || n < 1 || k < 1 || k > n {
		return 0, 0, errors.New("k and n must be whole numbers with 1 <= k <= n")
	}
	return k, n, nil
}

// shardKey is the path a file is sharded by: relative to the root of the
// git work tree holding it (the nearest folder up from it with a .git
// entry), or outside git relative to base (the folder the command was
// given), in slash form. So `kmx test .`, `kmx test ci` and an absolute
// path put a file in the same shard on every machine. roots caches the
// work tree root of each folder.
func shardKey(path, base string, roots map[string]string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.ToSlash(filepath.Clean(path))
	}
	dir := filepath.Dir(abs)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	root, ok := roots[dir]
	if !ok {
		root = gitRoot(dir)
		roots[dir] = root
	}
	if root == "" {
		if b, err := filepath.Abs(base); err == nil {
			if real, err := filepath.EvalSymlinks(b); err == nil {
				b = real
			}
			root = b
		}
	}
	if rel, err := filepath.Rel(root, filepath.Join(dir, filepath.Base(abs))); err == nil && root != "" {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(filepath.Clean(path))
}

// gitRoot is the nearest folder at or above dir holding a .git entry (a
// folder, or the file a linked work tree or submodule has), or "".
func gitRoot(dir string) string {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// shardOf is the shard (1..n) a shard key belongs to: a hash of its slash
// form, the same on every machine and operating system.
func shardOf(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32()%uint32(n)) + 1
}
