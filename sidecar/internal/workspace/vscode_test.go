package workspace

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/vscodetools"
)

// Every VS Code tool a workspace answers takes every argument its table
// schema defines: a call with all of them is never refused for an unknown
// key or a wrong type.
func TestWorkspaceToolsTakeTheTableSchemasArguments(t *testing.T) {
	_, _, w := setup(t)
	for _, ref := range append(append([]string{}, ReadTools...), EditTools...) {
		fn := ref
		tool, ok := vscodetools.Lookup(ref)
		if !ok {
			t.Errorf("%s is not in VS Code's table", ref)
			continue
		}
		var schema struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
		}
		if err := json.Unmarshal([]byte(tool.Schema), &schema); err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		args := map[string]any{}
		for name, p := range schema.Properties {
			switch p.Type {
			case "number":
				args[name] = 1
			case "boolean":
				args[name] = false
			case "array":
				args[name] = []string{"README.md"}
			default:
				args[name] = "README.md"
			}
		}
		b, _ := json.Marshal(args)
		r := call(t, w, fn, string(b))
		if r.IsError && (strings.Contains(r.Text, "does not take") || strings.Contains(r.Text, "must be")) {
			t.Errorf("%s (%s) refuses its own schema's arguments %s: %s", ref, fn, b, r.Text)
		}
	}
	if Answers("execute/runInTerminal") || Answers("read_readFile") || Answers(MultiReplace) {
		t.Fatal("a terminal tool is answered by the workspace")
	}
}

func TestUsagesTakesEitherSchema(t *testing.T) {
	_, _, w := setup(t)
	wantOK(t, call(t, w, ListCodeUsages, `{"symbol": "Add", "filePath": "calc/add.go"}`), "calc/mul.go:7:")
	wantOK(t, call(t, w, ListCodeUsages, `{"symbolName": "Add"}`), "calc/mul.go:7:")
	wantToolError(t, call(t, w, ListCodeUsages, `{"symbol": "Add", "symbolName": "Add"}`), "not both")
	wantToolError(t, call(t, w, ListCodeUsages, `{"symbol": "Add", "filePath": "../x"}`), `".."`)
}
