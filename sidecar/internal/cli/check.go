package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
)

const checkUsage = "kmx check FILE|FOLDER... [--shard K/N] [--json]"

// checkedFile is one file's entry in `kmx check --json`.
type checkedFile struct {
	Path        string                 `json:"path"`
	State       string                 `json:"state"`
	Revision    string                 `json:"revision"`
	Diagnostics []agentfile.Diagnostic `json:"diagnostics"`
}

// runCheck prints each file's diagnostics as `file:line:col: severity CODE
// message`. Exit 0 without errors, 1 with any error or unfinished file, 2 on usage or an
// unreadable file. It never executes anything.
func runCheck(_ context.Context, env Env, args []string) error {
	fs := newFlagSet("check")
	var asJSON bool
	var shard string
	fs.BoolVar(&asJSON, "json", false, "print diagnostics as JSON")
	fs.StringVar(&shard, "shard", "", "check only shard `K/N` of the files (stable across machines, for a CI matrix)")
	pos, err := parseInterspersed(fs, args, checkUsage)
	if err != nil {
		return err
	}
	set, err := agentFiles("check", pos, shard, checkUsage)
	if err != nil {
		return err
	}
	paths := set.paths
	// Read every file first: an unreadable one is a usage error, and no
	// partial report is printed.
	// Either file of an agent pair may be named; the other is read too.
	results := make([]agentfile.Result, len(paths))
	agentPaths := make([]string, len(paths))
	for i, p := range paths {
		src, err := readAgentFile("check", p)
		if err != nil {
			return err
		}
		if results[i], agentPaths[i], err = agentfile.ParseFile(p, src, invocation.ReadPairFile); err != nil {
			return usagef("check the path; kmx reads *.agent.md files and their *.agent.examples.yaml siblings", "kmx check: %v", err)
		}
	}
	files := []checkedFile{}
	errorsFound, unfinished := 0, 0
	for i, p := range paths {
		res := results[i]
		f := checkedFile{Path: p, State: res.State.String(), Diagnostics: res.Diagnostics}
		if f.Diagnostics == nil {
			f.Diagnostics = []agentfile.Diagnostic{}
		}
		if res.Agent != nil {
			f.Revision = res.Agent.Revision
		}
		for _, d := range res.Diagnostics {
			if d.Severity == agentfile.SeverityError {
				errorsFound++
			}
			if !asJSON {
				fmt.Fprintln(env.Stdout, agentfile.DiagnosticLine(agentPaths[i], d))
			}
		}
		// An unfinished file is Information in the editor (it is being
		// typed), but in CI it is a file kmx test would refuse: a finding.
		if res.State == agentfile.Unfinished {
			unfinished++
		}
		if !asJSON && len(res.Diagnostics) == 0 {
			fmt.Fprintf(env.Stdout, "%s: ok (%s)\n", p, res.State)
		}
		files = append(files, f)
	}
	// kmx.yaml holds the settings of the agent files in its folder: each
	// folder's is checked once, against every agent file in it.
	for _, f := range settingsFindings(agentPaths) {
		errorsFound++
		if !asJSON {
			fmt.Fprintln(env.Stdout, agentfile.DiagnosticLine(f.Path, f.Diagnostics[0]))
		}
		files = append(files, f)
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Files []checkedFile `json:"files"`
		}{files}); err != nil {
			return fmt.Errorf("write diagnostics: %w", err)
		}
	}
	if errorsFound > 0 || unfinished > 0 {
		if !asJSON {
			var found []string
			if errorsFound > 0 {
				found = append(found, plural(errorsFound, "error"))
			}
			if unfinished > 0 {
				found = append(found, plural(unfinished, "file")+" still being written (cut off inside a construct; kmx test would refuse it)")
			}
			fmt.Fprintf(env.Stderr, "kmx check: %s; fix them and check again (docs/diagnostics.md explains each code)\n", strings.Join(found, ", "))
		}
		return &FailureError{Msg: "errors found"}
	}
	return nil
}

// settingsFindings checks the kmx.yaml of every folder the agent files are
// in (each once, in order) and returns one entry per unusable kmx.yaml,
// with its problem as an error diagnostic on kmx.yaml.
func settingsFindings(agentPaths []string) []checkedFile {
	var out []checkedFile
	seen := map[string]bool{}
	for _, p := range agentPaths {
		dir := filepath.Dir(p)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		_, se := localtools.CheckFolderSettings(dir)
		if se == nil {
			continue
		}
		d := agentfile.Diagnostic{Severity: agentfile.SeverityError, Code: invocation.CodeSettings, Message: se.Problem}
		if se.Line > 0 {
			d.Range.Start = agentfile.Position{Line: se.Line - 1, Character: se.Column - 1}
			d.Range.End = agentfile.Position{Line: se.Line - 1, Character: se.Column}
		}
		out = append(out, checkedFile{Path: se.Path, State: agentfile.Invalid.String(), Diagnostics: []agentfile.Diagnostic{d}})
	}
	return out
}
