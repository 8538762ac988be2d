package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

const (
	journalUsage        = "kmx journal list [--json] [--file FILE] | kmx journal clear [RUN] [--json] | kmx journal inspect RUN [--json] [--show-content] [--show-reasoning] | kmx journal diff RUN_A RUN_B [--json]"
	journalListUsage    = "kmx journal list [--json] [--file FILE]"
	journalClearUsage   = "kmx journal clear [RUN] [--json]"
	journalInspectUsage = "kmx journal inspect RUN [--json] [--show-content] [--show-reasoning]"
)

// Schemas of the JSON the journal subcommands print. Inspect's is
// readback.InspectSchema.
const (
	JournalListSchema  = "kmx.journal.list/v2"
	JournalClearSchema = "kmx.journal.clear/v1"
)

// runJournal lists, clears or replays the retained runs in the journal
// folder. Like Explain it is offline: no model, provider, credential or
// network; it reads the environment only to find the state folder, and it
// never creates that folder.
func runJournal(ctx context.Context, env Env, args []string) error {
	if isHelp(args) {
		return &HelpRequest{Text: "Usage: " + strings.ReplaceAll(journalUsage, " | ", "\n       ") + "\n\nRun 'kmx journal list --help' (or clear, inspect, diff) for a subcommand's flags.\n"}
	}
	if len(args) == 0 {
		return usagef(journalUsage, "kmx journal: name what to do: list, clear, inspect or diff")
	}
	switch args[0] {
	case "list":
		return runJournalList(env, args[1:])
	case "clear":
		return runJournalClear(env, args[1:])
	case "inspect":
		return runJournalInspect(ctx, env, args[1:])
	case "diff":
		return runJournalDiff(ctx, env, args[1:])
	}
	return usagef(journalUsage, "kmx journal: unknown subcommand %q; use list, clear, inspect or diff", args[0])
}

// journalDir returns the journal folder and whether it exists. It checks
// each state component without creating any: a symlinked, foreign or
// broader component is a refusal that says how to fix it.
func journalDir(cmd string, env Env) (string, bool, error) {
	dir, exists, err := journal.ExistingDir(env.Getenv, runtime.GOOS)
	if err != nil {
		return "", false, &RefusalError{Msg: cmd + ": " + err.Error(), Next: problem.NextStep(err)}
	}
	return dir, exists, nil
}

func stateRefusal(cmd string, err error) error {
	var unsafe *state.UnsafeError
	if errors.As(err, &unsafe) {
		return &RefusalError{Msg: cmd + ": " + unsafe.Error(), Next: unsafe.Fix}
	}
	return &RefusalError{Msg: cmd + ": " + err.Error(), Next: "check the state folder (KMX_HOME), then try again"}
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}
