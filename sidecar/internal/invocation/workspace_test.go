package invocation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/localtools"
)

// A front's CheckWorkspace sees the fixture's path beside the agent file
// before the fixture is read, and its refusal stops the plan; without it
// the fixture is read, its hash is in the settings revision, and the
// workspace tools are answered by the workspace.
func TestCheckWorkspaceRefusesBeforeTheFixtureIsRead(t *testing.T) {
	dir := t.TempDir()
	body := "---\nmodel: fake\ntools: ['read/readFile', 'web/fetch']\n---\nSay ok.\n\n## Examples\n\n```yaml\n- id: one\n  workspace: fx\n  input: hi\n  assert:\n    - fileUnchanged: a.go\n```\n"
	path := filepath.Join(dir, "a.agent.md")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "fx"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fx", "a.go"), []byte("package a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var seen string
	req := Request{Path: path, Source: []byte(body), CheckWorkspace: func(p string) error {
		seen = p
		return errors.New("its workspace is outside")
	}}
	_, err := Prepare(context.Background(), Options{}, req)
	r, ok := AsRefusal(err)
	if !ok || !strings.Contains(r.Msg, "its workspace is outside") || seen != filepath.Join(dir, "fx") {
		t.Fatalf("refusal %v (checked %q)", err, seen)
	}
	req.CheckWorkspace = nil
	plan, err := Prepare(context.Background(), Options{}, req)
	if err != nil {
		t.Fatal(err)
	}
	fx := plan.Workspace("one")
	if fx == nil || plan.SettingsRevision() == plan.tools.settings.Revision() {
		t.Fatalf("fixture %v, revision %q", fx, plan.SettingsRevision())
	}
	for _, tool := range plan.Tools("one") {
		want := localtools.SourceUnavailable
		if tool.Name == "read/readFile" {
			want = localtools.SourceWorkspace
		}
		if tool.Source != want {
			t.Errorf("%s has source %s, want %s", tool.Name, tool.Source, want)
		}
	}
}
