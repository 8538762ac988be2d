package compare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// RevisionError is a baseline kmx refused before anything was created or
// sent: what is wrong, and what to change. Msg and Next are the command
// line's words; MessageIn and NextStepIn word them for each front
// (problem.Worded), since both name the baseline setting.
type RevisionError struct {
	Msg  string
	Next string

	say, step problem.Sentence
}

func (e *RevisionError) Error() string { return e.Msg }

// NextStep is what to change (problem.Problem).
func (e *RevisionError) NextStep() string { return e.Next }

// MessageIn is Msg in w's words.
func (e *RevisionError) MessageIn(w problem.Words) string {
	if e.say != nil {
		return e.say(w)
	}
	return e.Msg
}

// NextStepIn is Next in w's words.
func (e *RevisionError) NextStepIn(w problem.Words) string {
	if e.step != nil {
		return e.step(w)
	}
	return e.Next
}

// RefuseBaseline is a RevisionError whose message starts with the
// baseline setting given value ("--baseline HEAD~1"; value "" names the
// setting alone) followed by rest (format, args).
func RefuseBaseline(value string, next problem.Sentence, rest string, args ...any) *RevisionError {
	tail := fmt.Sprintf(rest, args...)
	say := func(w problem.Words) string { return w(problem.Baseline, value) + tail }
	return &RevisionError{Msg: say(problem.Flags), Next: next(problem.Flags), say: say, step: next}
}

// orNone is a next step that ends with comparing against no instructions:
// before, the baseline setting none, after.
func orNone(before, after string) problem.Sentence {
	return func(w problem.Words) string { return before + w(problem.Baseline, "none") + after }
}

// AtRevision is an agent file's text as it was at a git revision.
type AtRevision struct {
	Baseline Baseline
	Source   []byte
}

// ReadAtRevision reads the file at path as it was at git revision rev,
// with git's plumbing (rev-parse, ls-tree, cat-file): nothing is checked
// out, no index or lock is written, no hook, filter or text conversion
// runs. It refuses, with a RevisionError, a path outside a git work tree,
// a revision git does not know as a commit, and a path that was not a
// regular file at that commit (absent, a folder, a symlink, a submodule),
// or one larger than agentfile.MaxFileSize.
func ReadAtRevision(ctx context.Context, path, rev string) (*AtRevision, error) {
	if err := checkRev(rev); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", path, err)
	}
	dir, base := filepath.Dir(abs), filepath.Base(abs)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, RefuseBaseline(rev, problem.Plain("check the path of the agent file"), ": the folder of %s cannot be read", path)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, RefuseBaseline(rev, orNone("install git, or use ", " to compare with empty instructions"), " reads %s at a git revision, and git is not installed here", path)
	}
	g := gitIn{ctx: ctx, dir: dir}
	inside, gerr := g.run("rev-parse", "--is-inside-work-tree")
	if gerr != nil || strings.TrimSpace(string(inside)) != "true" {
		why := ""
		if line := firstLine(gerr); line != "" {
			why = " (git: " + line + ")"
		}
		return nil, RefuseBaseline(rev, func(w problem.Words) string {
			where := "run kmx test inside a git clone that holds the file"
			if !problem.CommandLine(w) {
				where = w(problem.Call, "") + " " + w(problem.TestCmd, "") + " on a file inside a git clone"
			}
			return where + ", or use " + w(problem.Baseline, "none") + " to compare with empty instructions"
		}, ": %s is not inside a git work tree%s, so it has no revision %s", path, why, rev)
	}
	out, gerr := g.run("rev-parse", "--verify", "--quiet", rev+"^{commit}")
	commit := strings.TrimSpace(string(out))
	if gerr != nil || commit == "" {
		return nil, RefuseBaseline(rev, problem.Plain("name a commit git knows here (HEAD~1, main, origin/main, a tag or a commit hash); in a shallow CI clone, fetch the history first (actions/checkout with fetch-depth: 0, or git fetch --deepen)"), ": git knows no commit %s in this repository", rev)
	}
	prefix, gerr := g.run("rev-parse", "--show-prefix")
	if gerr != nil {
		return nil, fmt.Errorf("--baseline %s: find %s in its repository: %s", rev, path, firstLine(gerr))
	}
	rel := strings.TrimSpace(string(prefix)) + base
	entry, gerr := g.run("ls-tree", "-z", "--full-tree", commit, "--", rel)
	if gerr != nil {
		return nil, fmt.Errorf("--baseline %s: list %s at %s: %s", rev, rel, short(commit), firstLine(gerr))
	}
	b := Baseline{Rev: rev, Commit: commit, Path: rel}
	mode, kind, object, ok := parseTreeEntry(entry)
	switch {
	case !ok:
		return nil, RefuseBaseline(rev, orNone("choose a revision at which the file existed, or use ", " to compare with empty instructions"), ": %s did not exist at %s (commit %s)", rel, rev, short(commit))
	case kind != "blob" || mode == "120000":
		what := map[string]string{"tree": "a folder", "commit": "a submodule"}[kind]
		if mode == "120000" {
			what = "a symbolic link"
		}
		if what == "" {
			what = "not a file"
		}
		return nil, RefuseBaseline(rev, problem.Plain("choose a revision at which the path was the agent file itself"), ": %s was %s at %s (commit %s), not an agent file", rel, what, rev, short(commit))
	}
	size, gerr := g.run("cat-file", "-s", object)
	n, perr := strconv.ParseInt(strings.TrimSpace(string(size)), 10, 64)
	if gerr != nil || perr != nil {
		return nil, fmt.Errorf("--baseline %s: size of %s at %s: %s", rev, rel, short(commit), firstLine(gerr))
	}
	if n > agentfile.MaxFileSize {
		return nil, RefuseBaseline(rev, problem.Plain("choose a revision at which the file was an agent file of a usable size"), ": %s was %d bytes at %s, more than the %d kmx reads", rel, n, short(commit), agentfile.MaxFileSize)
	}
	src, gerr := g.run("cat-file", "blob", object)
	if gerr != nil {
		return nil, fmt.Errorf("--baseline %s: read %s at %s: %s", rev, rel, short(commit), firstLine(gerr))
	}
	return &AtRevision{Baseline: b, Source: src}, nil
}

// checkRev refuses revisions git would read as something else: empty, an
// option, or holding a control character.
func checkRev(rev string) error {
	switch {
	case rev == "":
		return RefuseBaseline("", problem.Plain("name a git revision (HEAD~1, main, a tag or a commit hash) or none"), " is empty")
	case strings.HasPrefix(rev, "-"):
		return RefuseBaseline(strconv.Quote(rev), problem.Plain("name a git revision (HEAD~1, main, a tag or a commit hash) or none"), " starts with '-', which git would read as an option")
	case strings.ContainsFunc(rev, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return RefuseBaseline("", problem.Plain("name a git revision (HEAD~1, main, a tag or a commit hash) or none"), " holds a control character")
	}
	return nil
}

// parseTreeEntry reads one `git ls-tree -z` line: "MODE TYPE OBJECT\tPATH\0".
func parseTreeEntry(out []byte) (mode, kind, object string, ok bool) {
	line, _, _ := bytes.Cut(out, []byte{0})
	meta, _, found := bytes.Cut(line, []byte{'\t'})
	if !found {
		return "", "", "", false
	}
	f := strings.Fields(string(meta))
	if len(f) != 3 {
		return "", "", "", false
	}
	return f[0], f[1], f[2], true
}

// gitIn runs git plumbing in one folder. Optional locks are off (a read
// never refreshes the index), prompts are off, and messages are in C.
type gitIn struct {
	ctx context.Context
	dir string
}

func (g gitIn) run(args ...string) ([]byte, error) {
	cmd := exec.CommandContext(g.ctx, "git", append([]string{"-C", g.dir, "--no-pager"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &gitError{stderr: stderr.String(), err: err}
	}
	return out, nil
}

type gitError struct {
	stderr string
	err    error
}

func (e *gitError) Error() string {
	if s := strings.TrimSpace(e.stderr); s != "" {
		return s
	}
	return e.err.Error()
}

// firstLine is the first line of a git error, for a message.
func firstLine(err error) string {
	var ge *gitError
	if err == nil || !errors.As(err, &ge) {
		if err != nil {
			return err.Error()
		}
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(ge.Error()), "\n")
	return strings.TrimPrefix(line, "fatal: ")
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// InstructionsAt is the instructions the agent file's text old gives, read
// as kmx reads the current file: with the examples file beside it when
// there is one (examplesPath and examplesSrc, the current examples file's
// name and text; empty for the single-file form), its whole body; else the
// text between the header and the Examples heading. The current examples
// are what runs: only the instructions come from old. It refuses old text
// whose header or instructions have an error (a credential shape among
// them), naming the first; errors in its Examples block do not matter, as
// that block is not used.
func InstructionsAt(agentPath string, old []byte, examplesPath string, examplesSrc []byte, rev string) (string, error) {
	var res agentfile.Result
	if examplesPath != "" {
		res = agentfile.ParsePair(agentPath, old, examplesPath, examplesSrc)
	} else {
		res = agentfile.Parse(agentPath, old)
	}
	if res.Agent == nil {
		return "", RefuseBaseline(rev, problem.Plain("choose a revision at which the agent file could be read"), ": the agent file could not be read at %s", rev)
	}
	for _, d := range res.Diagnostics {
		if d.Severity != agentfile.SeverityError || d.File != "" {
			continue
		}
		if h := res.Agent.ExamplesHeading; h != nil && d.Range.Start.Offset >= h.Start.Offset {
			continue
		}
		return "", RefuseBaseline(rev, orNone("choose a revision at which the header and instructions were valid, or use ", ""), ": the agent file at %s has an error before its examples: %d:%d %s %s", rev, d.Range.Start.Line+1, d.Range.Start.Character+1, d.Code, d.Message)
	}
	return res.Agent.Instructions, nil
}
