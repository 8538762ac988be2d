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
// and node_modules skipped). --shard K/N then keeps a stable subset: the
// files whose path hashes to K of N, so adding a file never moves the
// others between the machines of a CI matrix.
func agentFiles(cmd string, args []string, shard, usage string) (fileSet, error) {
	if len(args) == 0 {
		return fileSet{}, usagef(usage, "kmx %s: name at least one agent file or folder", cmd)
	}
	set := fileSet{many: len(args) > 1 || shard != ""}
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			set.paths = append(set.paths, p)
		}
	}
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil || !fi.IsDir() {
			add(a) // read (and refused if unreadable) like any file
			continue
		}
		set.many = true
		found, err := agentFilesUnder(a)
		if err != nil {
			return fileSet{}, usagef("check the folder; kmx reads *.agent.md files under it", "kmx %s: cannot list %s: %v", cmd, a, unwrapPathError(err))
		}
		if len(found) == 0 {
			return fileSet{}, usagef("name a folder that holds *.agent.md files, or the files themselves", "kmx %s: %s holds no *.agent.md file", cmd, a)
		}
		for _, p := range found {
			add(p)
		}
	}
	if shard != "" {
		k, n, err := parseShard(shard)
		if err != nil {
			return fileSet{}, usagef("give --shard K/N with 1 <= K <= N, for example --shard 2/4", "kmx %s: --shard %s: %v", cmd, shard, err)
		}
		var kept []string
		for _, p := range set.paths {
			if shardOf(p, n) == k {
				kept = append(kept, p)
			}
		}
		set.paths = kept
	}
	return set, nil
}

func agentFilesUnder(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".agent.md") && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
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

// shardOf is the shard (1..n) a path belongs to: a hash of its slash form,
// the same on every machine and operating system.
func shardOf(path string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(filepath.ToSlash(filepath.Clean(path))))
	return int(h.Sum32()%uint32(n)) + 1
}
