package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/workspace"
)

// workspaceLine is an example's workspace summary under its line:
// "workspace: fixtures/calc · 1 changed: calc/add.go (modified)"; "" for
// an example without one. Paths and counts only, never content.
func workspaceLine(ex runner.ExampleResult) string { return summaryLine(ex.Workspace) }

// summaryLine is workspaceLine for one summary: an example's or a turn's.
func summaryLine(w *runner.WorkspaceSummary) string {
	if w == nil {
		return ""
	}
	if len(w.Changed) == 0 {
		return fmt.Sprintf("workspace: %s · nothing changed", w.Fixture)
	}
	parts := make([]string, 0, len(w.Changed))
	for _, c := range w.Changed {
		parts = append(parts, c.Path+" ("+c.Kind+")")
	}
	return fmt.Sprintf("workspace: %s · %d changed: %s", w.Fixture, len(w.Changed), strings.Join(parts, ", "))
}

// printWorkspace prints the workspace line, the kept copy's folder, and,
// with --show-content, a failing or unknown example's changes as unified
// diffs (workspace.Diff), indented under the example.
func printWorkspace(w io.Writer, ex runner.ExampleResult, showContent bool) {
	printWorkspaceAt(w, ex, "                                    ", showContent && ex.Verdict != runner.VerdictPass)
}

// printWorkspaceAt prints the workspace line and the kept copy's folder
// at indent, and the changes as unified diffs when diffs is set.
func printWorkspaceAt(w io.Writer, ex runner.ExampleResult, indent string, diffs bool) {
	if line := workspaceLine(ex); line != "" {
		fmt.Fprintf(w, "%s%s\n", indent, line)
	}
	if ex.KeptWorkspace != "" {
		fmt.Fprintf(w, "%sworkspace kept: %s\n", indent, ex.KeptWorkspace)
	}
	o := ex.WorkspaceOutcome()
	if o == nil || len(o.Changes) == 0 {
		return
	}
	if !diffs {
		if ex.Verdict != runner.VerdictPass {
			fmt.Fprintf(w, "%sdiff withheld: add --show-content to see the changes\n", indent)
		}
		return
	}
	for _, c := range o.Changes {
		for _, l := range strings.Split(strings.TrimRight(workspace.Diff(c), "\n"), "\n") {
			fmt.Fprintf(w, "%s%s\n", indent, l)
		}
	}
}

// junitWorkspaceProps adds an example's workspace to its JUnit
// properties: the fixture, the counts and each changed path, no content.
func junitWorkspaceProps(props *junitProps, ex runner.ExampleResult) *junitProps {
	w := ex.Workspace
	if w == nil {
		return props
	}
	if props == nil {
		props = &junitProps{}
	}
	props.Items = append(props.Items, junitProp{"workspace", w.Fixture},
		junitProp{"workspaceChanged", fmt.Sprintf("added=%d modified=%d deleted=%d", w.Counts.Added, w.Counts.Modified, w.Counts.Deleted)})
	for _, c := range w.Changed {
		props.Items = append(props.Items, junitProp{"workspaceFile", c.Kind + "=" + c.Path})
	}
	return props
}
