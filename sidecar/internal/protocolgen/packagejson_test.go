package protocolgen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestPackageJSONFollowsTheContract: the extension's manifest offers a
// setting for every field of the Go Settings (as kmx.<json name>) and
// declares every contract command a person can run, and docs/protocol.md
// names every command and method; so a change on the Go side fails here
// until the manifest and the docs follow it.
func TestPackageJSONFollowsTheContract(t *testing.T) {
	root := testutil.ModuleRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Contributes struct {
			Commands []struct {
				Command string `json:"command"`
			} `json:"commands"`
			Configuration struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"configuration"`
		} `json:"contributes"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	st := reflect.TypeOf(lsp.Settings{})
	for i := 0; i < st.NumField(); i++ {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if _, ok := pkg.Contributes.Configuration.Properties["kmx."+name]; !ok {
			t.Errorf("package.json has no setting kmx.%s for lsp.Settings.%s", name, st.Field(i).Name)
		}
	}
	declared := map[string]bool{}
	for _, c := range pkg.Contributes.Commands {
		declared[c.Command] = true
	}
	// kmx.listRuns and kmx.inspectRun take arguments only the server's
	// lenses give; they are served, not offered in the palette.
	internal := map[string]bool{lsp.CommandListRuns: true, lsp.CommandInspectRun: true}
	for id := range lsp.Commands() {
		if !internal[id] && !declared[id] {
			t.Errorf("package.json does not declare the contract command %s", id)
		}
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	for id := range lsp.Commands() {
		if !strings.Contains(string(doc), "`"+id+"`") {
			t.Errorf("docs/protocol.md does not name the command %s", id)
		}
	}
	for _, m := range lsp.Methods() {
		if !strings.Contains(string(doc), "`"+m.Method+"`") {
			t.Errorf("docs/protocol.md does not name the method %s", m.Method)
		}
	}
}
