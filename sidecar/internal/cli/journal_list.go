package cli

import (
	"fmt"
	"io"
	"slices"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// journalList is the JSON of kmx journal list: runs newest first.
type journalList struct {
	Schema string `json:"schema"`
	Label  string `json:"label"`
	Dir    string `json:"dir"`
	// Keep is how many runs retention keeps when a run starts.
	Keep int `json:"keep"`
	// File is set with --file: the agent the runs were filtered to.
	File *listedFile `json:"file,omitempty"`
	Runs []listedRun `json:"runs"`
}

type listedFile struct {
	Path     string `json:"path"`
	AgentID  string `json:"agentId"`
	Revision string `json:"revision"`
	// key is the agent file's journal path (journal.PathKey): runs of
	// another file with the same name are not this file's.
	key string
}

type listedRun struct {
	journal.RunInfo
	// CurrentRevision is set with --file: whether the run was of the file's
	// current bytes (false: an earlier revision of the same agent).
	CurrentRevision *bool `json:"currentRevision,omitempty"`
}

func runJournalList(env Env, args []string) error {
	flags := newFlagSet("journal list")
	var asJSON bool
	var file string
	flags.BoolVar(&asJSON, "json", false, "print the versioned JSON list")
	flags.StringVar(&file, "file", "", "list only the runs of agent `FILE` (this file, not another with its name), marking its current revision")
	pos, err := parseInterspersed(flags, args, journalListUsage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(journalListUsage, "kmx journal list: unexpected argument %q; to filter by file use --file %s", pos[0], pos[0])
	}
	var lf *listedFile
	if file != "" {
		src, err := readAgentFile("journal list", file)
		if err != nil {
			return err
		}
		res, agentPath, err := agentfile.ParseFile(file, src, invocation.ReadPairFile)
		if err != nil {
			return usagef("pass a *.agent.md file", "kmx journal list: %v", err)
		}
		if res.Agent == nil || res.Agent.ID == "" {
			return usagef("pass a *.agent.md file", "kmx journal list: cannot tell which agent %s is", file)
		}
		lf = &listedFile{Path: file, AgentID: res.Agent.ID, Revision: res.Agent.Revision, key: journal.PathKey(agentPath)}
	}
	dir, exists, err := journalDir("kmx journal list", env)
	if err != nil {
		return err
	}
	var runs []journal.RunInfo
	if exists {
		agentID, agentPath := "", ""
		if lf != nil {
			agentID, agentPath = lf.AgentID, lf.key
		}
		if runs, err = journal.ListAgent(dir, agentID, agentPath); err != nil {
			return stateRefusal("kmx journal list", err)
		}
	}
	out := journalList{Schema: JournalListSchema, Label: runner.Label, Dir: dir, Keep: journal.KeepRuns, File: lf, Runs: []listedRun{}}
	for _, r := range slices.Backward(runs) {
		lr := listedRun{RunInfo: r}
		if lf != nil {
			cur := r.AgentRevision == lf.Revision
			lr.CurrentRevision = &cur
		}
		out.Runs = append(out.Runs, lr)
	}
	if asJSON {
		return encodeJSON(env.Stdout, out)
	}
	printRuns(env.Stdout, out)
	return nil
}

func printRuns(w io.Writer, l journalList) {
	fmt.Fprintf(w, "kmx journal list (%s) · %s\n", l.Label, l.Dir)
	if l.File != nil {
		fmt.Fprintf(w, "runs of agent %s (%s)\n", clean(l.File.AgentID), l.File.Path)
	}
	if len(l.Runs) == 0 {
		fmt.Fprintln(w, "no retained runs")
		return
	}
	fmt.Fprintf(w, "%-36s %-18s %-8s %-24s %9s\n", "RUN", "STATUS", "COMMAND", "AGENT", "SIZE")
	for _, r := range l.Runs {
		agent := clean(r.AgentID)
		switch {
		case r.Command == "baseline":
			// A comparison's baseline ran another revision's instructions
			// (or none) on purpose: not an out-of-date run of the file.
			agent += " (baseline)"
		case r.CurrentRevision != nil && !*r.CurrentRevision:
			agent += " (earlier revision)"
		}
		fmt.Fprintf(w, "%-36s %-18s %-8s %-24s %9s\n", r.ID, r.Status, clean(r.Command), agent, sizeText(r.Size))
		if r.Problem != "" {
			fmt.Fprintf(w, "%-36s %s\n", "", clean(r.Problem))
		}
	}
	fmt.Fprintf(w, "%s, newest first; kmx keeps the newest %d when a run starts\n", plural(len(l.Runs), "run"), l.Keep)
	fmt.Fprintln(w, "next: kmx journal inspect RUN to replay one, kmx journal clear [RUN] to remove runs")
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
