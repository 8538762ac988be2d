package protocolgen

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestPackageJSONIsCurrent fails when package.json's commands or settings
// are not what the Go contract (lsp/contract_manifest.go) generates: make
// protocol rewrites them.
func TestPackageJSONIsCurrent(t *testing.T) {
	checkCurrent(t, PackageJSONPath, KMXPackageJSON)
}

// TestProtocolDocIsCurrent fails when a generated table of
// docs/protocol.md (commands, editor commands, settings) is stale.
func TestProtocolDocIsCurrent(t *testing.T) {
	checkCurrent(t, ProtocolDocPath, KMXProtocolDoc)
	doc, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), ProtocolDocPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range append(lsp.Methods(), lsp.ClientMethods()...) {
		if !strings.Contains(string(doc), "`"+m.Method+"`") {
			t.Errorf("docs/protocol.md does not name the method %s", m.Method)
		}
	}
}

func checkCurrent(t *testing.T, rel string, gen func([]byte) ([]byte, error)) {
	t.Helper()
	cur, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	want, err := gen(cur)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cur, want) {
		t.Fatalf("%s is stale; run: make protocol", rel)
	}
}

// TestEveryCommandAndSettingIsDeclared: the manifest contract offers a
// setting for every field of the Go Settings, declares every server
// command a person can run, and names every declared command either as a
// server command or as one the extension handles alone (EditorCommands),
// each once.
func TestEveryCommandAndSettingIsDeclared(t *testing.T) {
	specs := map[string]lsp.SettingSpec{}
	for _, s := range lsp.SettingSpecs() {
		if _, dup := specs[s.Key]; dup {
			t.Errorf("setting %s is declared twice", s.Key)
		}
		specs[s.Key] = s
		switch s.Type {
		case "string":
			if _, ok := s.Default.(string); !ok {
				t.Errorf("setting %s: default %#v is not a string", s.Key, s.Default)
			}
		case "integer":
			d, ok := s.Default.(int)
			if !ok || s.Minimum == nil || s.Maximum == nil || d < *s.Minimum || d > *s.Maximum {
				t.Errorf("setting %s: default %#v is not an integer within its bounds", s.Key, s.Default)
			}
		default:
			t.Errorf("setting %s: type %q", s.Key, s.Type)
		}
		if s.Description == "" {
			t.Errorf("setting %s has no description", s.Key)
		}
	}
	st := reflect.TypeOf(lsp.Settings{})
	for i := 0; i < st.NumField(); i++ {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if _, ok := specs[name]; !ok {
			t.Errorf("no setting kmx.%s declared for lsp.Settings.%s", name, st.Field(i).Name)
		}
	}
	editorOnly := map[string]bool{}
	for _, g := range KMX().Groups {
		if g.Name == "EditorCommands" {
			for _, e := range g.Entries {
				editorOnly[e.Value.(string)] = true
			}
		}
	}
	declared := map[string]bool{}
	for _, c := range lsp.PaletteCommands() {
		if declared[c.ID] {
			t.Errorf("command %s is declared twice", c.ID)
		}
		declared[c.ID] = true
		if _, served := lsp.Commands()[c.ID]; !served && !editorOnly[c.ID] {
			t.Errorf("command %s is neither served nor in the generated EditorCommands", c.ID)
		}
		if c.Title == "" || c.Doc == "" {
			t.Errorf("command %s needs a title and a doc", c.ID)
		}
	}
	// kmx.listRuns and kmx.inspectRun take arguments only the server's
	// lenses give; they are served, not offered in the palette.
	internal := map[string]bool{lsp.CommandListRuns: true, lsp.CommandInspectRun: true}
	for id := range lsp.Commands() {
		if !internal[id] && !declared[id] {
			t.Errorf("the contract command %s is not declared", id)
		}
	}
	for id := range editorOnly {
		if !declared[id] {
			t.Errorf("the editor command %s is not declared", id)
		}
	}
}

// TestPackageJSONKeepsEverythingElse: the generator replaces only the two
// values it owns; every other byte (other keys before, between and after,
// their order, odd formatting) is kept, the result is what it says, and a
// second run changes nothing.
func TestPackageJSONKeepsEverythingElse(t *testing.T) {
	src := []byte("{\n\t\"name\":\"x\",  \"contributes\" : {\n\t\t\"menus\": {\"a\": [1,2]},\n\t\t\"configuration\"  :  {\"title\": \"old\", \"properties\": {}},\n\t\t\"x-commands\": \"commands\",\n\t\t\"commands\": [ {\"command\": \"old\"} ]\n\t},\n  \"scripts\": {\"contributes\": {\"commands\": 1}}\n}\n")
	two, four := 2, 4
	m := Manifest{
		Commands:           []ManifestCommand{{Command: "k.a", Title: "A & <b>", Category: "k"}, {Command: "k.b", Title: "B…", Category: "k"}},
		ConfigurationTitle: "k",
		Properties: []Property{
			{Key: "k.z", Type: "string", Default: "", MarkdownDescription: "last in the alphabet, first here"},
			{Key: "k.a", Type: "integer", Default: 3, Minimum: &two, Maximum: &four, Scope: "machine", MarkdownDescription: "n"},
		},
	}
	out, err := PackageJSON(src, m)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := PackageJSON(out, m); err != nil || !bytes.Equal(again, out) {
		t.Fatalf("a second run changed the file (err %v):\n%s\n--\n%s", err, out, again)
	}
	// Outside the two values, the bytes are the original's.
	blank := func(b []byte) string {
		sp, err := contributesSpans(b, "commands", "configuration")
		if err != nil {
			t.Fatal(err)
		}
		c, g := sp["commands"], sp["configuration"]
		return string(b[:g[0]]) + "CONFIGURATION" + string(b[g[1]:c[0]]) + "COMMANDS" + string(b[c[1]:])
	}
	if blank(out) != blank(src) {
		t.Fatalf("bytes outside the generated values changed:\n%s\n--\n%s", blank(src), blank(out))
	}
	var got struct {
		Contributes struct {
			Commands      []ManifestCommand `json:"commands"`
			Configuration struct {
				Title      string                     `json:"title"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"configuration"`
		} `json:"contributes"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the result is not JSON: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(got.Contributes.Commands, m.Commands) || got.Contributes.Configuration.Title != "k" || len(got.Contributes.Configuration.Properties) != 2 {
		t.Fatalf("contributes = %+v", got.Contributes)
	}
	if !bytes.Contains(out, []byte(`"A & <b>"`)) || bytes.Index(out, []byte(`"k.z"`)) > bytes.Index(out, []byte(`"k.a"`)) {
		t.Errorf("titles are escaped or the settings reordered:\n%s", out)
	}
	if !bytes.Contains(out, []byte("\n\t\t\"commands\": [\n\t\t  {\n\t\t    \"command\": \"k.a\",")) {
		t.Errorf("the generated value does not continue its line's indentation:\n%s", out)
	}

	if _, err := PackageJSON([]byte(`{"contributes": {"commands": []}}`), m); err == nil || !strings.Contains(err.Error(), "no contributes.configuration") {
		t.Errorf("a manifest without contributes.configuration: err %v", err)
	}
	if _, err := PackageJSON([]byte(`{"contributes": [`), m); err == nil {
		t.Error("a broken manifest was accepted")
	}
}

func TestReplaceGenerated(t *testing.T) {
	doc := []byte("a\n<!-- BEGIN GENERATED t -->\nold\n<!-- END GENERATED t -->\nb\n")
	out, err := ReplaceGenerated(doc, "t", []byte("new\n"))
	if err != nil || string(out) != "a\n<!-- BEGIN GENERATED t -->\nnew\n<!-- END GENERATED t -->\nb\n" {
		t.Fatalf("%q, %v", out, err)
	}
	for _, bad := range []string{"a\n", "<!-- END GENERATED t -->\n<!-- BEGIN GENERATED t -->\n", string(doc) + string(doc)} {
		if _, err := ReplaceGenerated([]byte(bad), "t", nil); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
