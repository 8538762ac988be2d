package vscodetools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Every table tool's function name is one an endpoint accepts and no two
// tools share one, so a file declaring every set offers each tool once.
func TestFunctionNamesAreValidAndUnique(t *testing.T) {
	seen := map[string]string{}
	for _, tool := range Tools() {
		fn := functionName(tool.Name)
		if !FunctionPattern.MatchString(fn) {
			t.Errorf("%s: function name %q does not match %s", tool.Name, fn, FunctionPattern)
		}
		if other, dup := seen[fn]; dup {
			t.Errorf("%s and %s share the function name %q", tool.Name, other, fn)
		}
		seen[fn] = tool.Name
	}
	if fn := functionName("edit/editFiles"); fn != "edit_editFiles" {
		t.Errorf("edit/editFiles -> %q, want edit_editFiles", fn)
	}
}

func TestTableIsWellFormed(t *testing.T) {
	names := map[string]bool{}
	ids := map[string]string{}
	for _, tool := range Tools() {
		if names[tool.Name] {
			t.Errorf("%s is listed twice", tool.Name)
		}
		names[tool.Name] = true
		if tool.ID == "" || strings.TrimSpace(tool.Description) == "" {
			t.Errorf("%s has no id or description", tool.Name)
		}
		for _, id := range append([]string{tool.ID}, tool.IDs...) {
			if other, dup := ids[id]; dup {
				t.Errorf("%s and %s share the VS Code id %q", tool.Name, other, id)
			}
			ids[id] = tool.Name
		}
		var schema map[string]any
		if err := json.Unmarshal([]byte(tool.Schema), &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: schema is not a JSON object schema: %v", tool.Name, err)
		}
		if req, ok := schema["required"].([]any); ok {
			props, _ := schema["properties"].(map[string]any)
			for _, r := range req {
				if _, ok := props[r.(string)]; !ok {
					t.Errorf("%s: required %q is not a property", tool.Name, r)
				}
			}
		}
	}
	inSet := map[string]bool{}
	for _, s := range Sets() {
		for _, m := range s.Members {
			if !names[m] || !strings.HasPrefix(m, s.Name+"/") {
				t.Errorf("set %s: member %q is not a table tool of that set", s.Name, m)
			}
			inSet[m] = true
		}
	}
	for n := range names {
		if strings.Contains(n, "/") && !inSet[n] {
			t.Errorf("%s is named as a set member, but no set holds it", n)
		}
	}
	for legacy, targets := range LegacyNames() {
		for _, target := range targets {
			if !names[target] {
				t.Errorf("legacy name %s resolves to %q, which is not a table tool", legacy, target)
			}
		}
	}
}

func names(offers []Offer) []string {
	out := make([]string, 0, len(offers))
	for _, o := range offers {
		out = append(out, o.Name)
	}
	return out
}

func TestResolve(t *testing.T) {
	tests := []struct {
		ref   string
		want  []string
		kind  string
		known bool
	}{
		{"edit/editFiles", []string{"edit/editFiles"}, KindBuiltin, true},
		{"editFiles", []string{"edit/editFiles"}, KindBuiltin, true},
		{"codebase", []string{"search/codebase"}, KindBuiltin, true},
		{"search/codebase", []string{"search/codebase"}, KindBuiltin, true},
		{"problems", []string{"read/problems"}, KindBuiltin, true},
		{"changes", []string{"search/changes"}, KindBuiltin, true},
		{"usages", []string{"search/usages"}, KindBuiltin, true},
		{"fetch", []string{"web/fetch"}, KindBuiltin, true},
		{"web/fetch", []string{"web/fetch"}, KindBuiltin, true},
		{"githubRepo", []string{"web/githubRepo"}, KindBuiltin, true},
		{"testFailure", []string{"execute/testFailure"}, KindBuiltin, true},
		{"terminalLastCommand", []string{"read/terminalLastCommand"}, KindBuiltin, true},
		{"findTestFiles", []string{"findTestFiles"}, KindBuiltin, true},
		{"todos", []string{"todo"}, KindBuiltin, true},
		{"runCommands/runInTerminal", []string{"execute/runInTerminal"}, KindBuiltin, true},
		{"execute/runInTerminal", []string{"execute/runInTerminal"}, KindBuiltin, true},
		{"runCommands", []string{"execute/runInTerminal", "execute/getTerminalOutput", "read/terminalLastCommand", "read/terminalSelection"}, KindBuiltin, true},
		{"web", []string{"web/fetch", "web/githubRepo"}, KindBuiltin, true},
		{"search", []string{"search/changes", "search/codebase", "search/fileSearch", "search/listDirectory", "search/searchResults", "search/textSearch", "search/usages"}, KindBuiltin, true},
		{"github/*", []string{"github/*"}, KindMCP, true},
		{"github/create_issue", []string{"github/create_issue"}, KindMCP, true},
		{"microsoft.docs.mcp", []string{"microsoft.docs.mcp"}, KindMCP, true},
		{"github_list_merged_prs", []string{"github_list_merged_prs"}, KindOther, true},
		{"*", []string{"*"}, KindMCP, true},
		{"ping", []string{"ping"}, KindOther, false},
		{"search/noSuchTool", []string{"search/noSuchTool"}, KindOther, false},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			got := Resolve(tc.ref)
			if !reflect.DeepEqual(names(got), tc.want) {
				t.Fatalf("Resolve(%q) = %v, want %v", tc.ref, names(got), tc.want)
			}
			for _, o := range got {
				if o.Kind != tc.kind || o.Reference != tc.ref || !FunctionPattern.MatchString(o.Function) {
					t.Errorf("%+v: want kind %s, reference %q, a valid function name", o, tc.kind, tc.ref)
				}
				if o.Kind == KindMCP && o.Schema != empty {
					t.Errorf("%s: an MCP stub's schema is %s, want the empty object", o.Name, o.Schema)
				}
			}
			if Known(tc.ref) != tc.known {
				t.Errorf("Known(%q) = %v, want %v", tc.ref, !tc.known, tc.known)
			}
		})
	}
	if fn := Resolve("github/*")[0].Function; fn != "github_all" {
		t.Errorf("github/* -> %q, want github_all", fn)
	}
}

// A real file's list: each tool once, in order, with unique function names.
func TestExpand(t *testing.T) {
	got := Expand([]string{"search", "edit/editFiles", "codebase", "runCommands", "web/fetch", "github/*", "editFiles", "ping"})
	var fns []string
	seen := map[string]bool{}
	for _, o := range got {
		if seen[o.Function] {
			t.Errorf("function %q offered twice", o.Function)
		}
		seen[o.Function] = true
		fns = append(fns, o.Function)
	}
	want := []string{"search_changes", "search_codebase", "search_fileSearch", "search_listDirectory", "search_searchResults", "search_textSearch", "search_usages",
		"edit_editFiles", "execute_runInTerminal", "execute_getTerminalOutput", "read_terminalLastCommand", "read_terminalSelection", "web_fetch", "github_all", "ping"}
	if !reflect.DeepEqual(fns, want) {
		t.Fatalf("functions = %v\nwant        %v", fns, want)
	}
	if got[1].Reference != "search" || got[7].Reference != "edit/editFiles" {
		t.Errorf("the first reference keeps a tool: %+v %+v", got[1], got[7])
	}
	// Colliding mappings get a suffix, within 64 bytes.
	long := strings.Repeat("a", 70)
	got = Expand([]string{"a.b/*", "a_b/*", long + "/x", long + "/y"})
	want = []string{"a_b_all", "a_b_all_2", strings.Repeat("a", 64), strings.Repeat("a", 62) + "_2"}
	if !reflect.DeepEqual(fnsOf(got), want) {
		t.Fatalf("functions = %v, want %v", fnsOf(got), want)
	}
}

func fnsOf(offers []Offer) []string {
	out := make([]string, 0, len(offers))
	for _, o := range offers {
		out = append(out, o.Function)
	}
	return out
}

func TestCoversAndOverlaps(t *testing.T) {
	yes := [][2]string{{"edit", "edit/editFiles"}, {"editFiles", "edit/editFiles"}, {"edit/editFiles", "edit/editFiles"}, {"runCommands", "execute/runInTerminal"}, {"github/*", "github/*"}, {"ping", "ping"}}
	no := [][2]string{{"edit", "search/codebase"}, {"search", "edit/editFiles"}, {"github/*", "github/create_issue"}, {"ping", "pong"}}
	for _, c := range yes {
		if !Covers(c[0], c[1]) {
			t.Errorf("Covers(%q, %q) = false", c[0], c[1])
		}
	}
	for _, c := range no {
		if Covers(c[0], c[1]) {
			t.Errorf("Covers(%q, %q) = true", c[0], c[1])
		}
	}
	if !Overlaps("edit/editFiles", "edit") || !Overlaps("codebase", "search") || Overlaps("web", "edit") {
		t.Error("Overlaps does not follow set membership")
	}
}
