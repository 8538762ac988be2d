package lsp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

// Issue 31 item 14: two files with the same name in different folders
// were one agent: the editor listed, replayed and re-graded each one's
// runs as the other's. Runs are keyed by the file's path as well as its
// agent ID.
func TestSameNamedFilesInTwoFoldersHaveTheirOwnRunsAndLenses(t *testing.T) {
	root := t.TempDir()
	var uris [2]string
	for i, folder := range []string{"ci", "tools"} {
		if err := os.Mkdir(filepath.Join(root, folder), 0o700); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, folder, "greeter.agent.md")
		if err := os.WriteFile(p, []byte(greeter), 0o600); err != nil {
			t.Fatal(err)
		}
		uris[i] = fileURI(p)
	}
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	for _, u := range uris {
		c.open(u, 1, greeter)
	}

	var ci lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uris[0]}, &ci)
	if ci.Report == nil || ci.Report.RunID == "" {
		t.Fatalf("testing ci/greeter.agent.md made no run: %+v", ci)
	}
	var other lsp.ListRunsResult
	c.mustCall(lsp.MethodListRuns, lsp.DocumentParams{URI: uris[1]}, &other)
	if len(other.Runs) != 0 {
		t.Fatalf("tools/greeter.agent.md lists %+v: the runs of ci/greeter.agent.md", other.Runs)
	}
	for _, l := range c.lenses(uris[1]) {
		if l.Command.Title == "Replay last run" || l.Command.Title == "Re-grade last run" {
			t.Errorf("tools/greeter.agent.md has a %q lens on ci/greeter.agent.md's run: %s", l.Command.Title, l.Command.Arguments)
		}
	}
	if err := c.call(lsp.MethodDiffRuns, lsp.DiffRunsParams{URI: uris[1]}, nil); err == nil {
		t.Error("tools/greeter.agent.md compared runs it never had")
	}

	var tools lsp.ReportResult
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uris[1]}, &tools)
	for i, want := range []string{ci.Report.RunID, tools.Report.RunID} {
		var runs lsp.ListRunsResult
		c.mustCall(lsp.MethodListRuns, lsp.DocumentParams{URI: uris[i]}, &runs)
		if len(runs.Runs) != 1 || runs.Runs[0].ID != want {
			t.Errorf("%s lists %+v, want its own run %s only", uris[i], runs.Runs, want)
		}
		found := false
		for _, l := range c.lenses(uris[i]) {
			if l.Command.Title != "Replay last run" {
				continue
			}
			var p lsp.InspectParams
			if err := json.Unmarshal(l.Command.Arguments[0], &p); err != nil {
				t.Fatal(err)
			}
			found = p.RunID == want
		}
		if !found {
			t.Errorf("%s: its Replay last run lens does not name its run %s", uris[i], want)
		}
	}
}
