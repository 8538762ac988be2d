package vscodetools

import (
	"regexp"
	"strconv"
	"strings"
)

// Kinds of offered tool.
const (
	// KindBuiltin is a tool of the table.
	KindBuiltin = "builtin"
	// KindMCP is an MCP server reference (`server/*`, `server/tool`, or a
	// server name with dots) kmx knows no definition for: a stub with an
	// empty-object schema.
	KindMCP = "mcp"
	// KindOther is a name the table does not know (an extension's tool, a
	// typo, kmx's own github_list_merged_prs): offered under its own name
	// with kmx's generic definition.
	KindOther = "other"
)

// OwnTools are the tools kmx itself defines (docs/tools.md); they are known
// names, never warned about.
var ownTools = map[string]bool{"github_list_merged_prs": true}

// FunctionPattern is what an OpenAI-compatible endpoint accepts as a
// function name; every offered tool's Function matches it.
var FunctionPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// MaxFunctionBytes is the longest function name an endpoint accepts.
const MaxFunctionBytes = 64

// Offer is one tool a declared reference stands for.
type Offer struct {
	// Name is the tool's canonical name: its full reference name for a
	// table tool (`edit/editFiles`, also when the file wrote `editFiles`),
	// the reference as written otherwise.
	Name string
	// Reference is the declared reference that brought the tool in, as the
	// file writes it (`edit`, `editFiles`, `github/*`).
	Reference string
	// Function is the name the model is offered the tool under.
	Function string
	// Kind is KindBuiltin, KindMCP or KindOther.
	Kind string
	// Description and Schema are what the model is offered (empty for
	// KindOther: kmx's generic definition applies).
	Description string
	Schema      string
	// IDs are the vscode.lm.tools names VS Code registers for the tool,
	// preferred first (table tools only).
	IDs []string
}

// Known reports whether ref is a reference kmx can name a definition or a
// stub for without guessing: a table tool or set (current or legacy name),
// an MCP server reference, or one of kmx's own tools. Anything else gets a
// KMX4007 warning and is still offered.
func Known(ref string) bool {
	offers := Resolve(ref)
	return len(offers) > 0 && (offers[0].Kind != KindOther || ownTools[ref])
}

// IsSet reports whether ref names a tool set (current or legacy).
func IsSet(ref string) bool {
	if _, ok := findSet(ref); ok {
		return true
	}
	_, ok := legacySets[ref]
	return ok
}

// Resolve returns the tools ref stands for, in the table's order: one tool,
// a set's members, or one stub (an MCP reference or a name the table does
// not know). It never returns nothing: a declared name is never dropped.
// Function names are the plain mapping; Expand makes them unique across a
// whole declaration.
func Resolve(ref string) []Offer {
	if ref == "*" {
		return []Offer{{Name: ref, Reference: ref, Function: "all_tools", Kind: KindMCP,
			Description: "Every tool available to the agent.", Schema: empty}}
	}
	if s, ok := findSet(ref); ok {
		return builtins(ref, s.Members)
	}
	if members, ok := legacySets[ref]; ok {
		return builtins(ref, members)
	}
	if name, ok := canonicalTool(ref); ok {
		return builtins(ref, []string{name})
	}
	if server, tool, ok := strings.Cut(ref, "/"); ok && server != "" && tool != "" && !isTableSet(server) {
		desc := "Tool " + tool + " of the MCP server " + server + "."
		if tool == "*" {
			desc = "The tools of the MCP server " + server + "."
		}
		return []Offer{{Name: ref, Reference: ref, Function: functionName(ref), Kind: KindMCP, Description: desc, Schema: empty}}
	}
	if strings.Contains(ref, ".") && !strings.Contains(ref, "/") {
		return []Offer{{Name: ref, Reference: ref, Function: functionName(ref), Kind: KindMCP,
			Description: "The tools of the MCP server " + ref + ".", Schema: empty}}
	}
	return []Offer{{Name: ref, Reference: ref, Function: functionName(ref), Kind: KindOther}}
}

// Expand resolves every declared reference in order and returns each tool
// once (the first reference that brings it in keeps it), with function
// names unique across the declaration.
func Expand(refs []string) []Offer {
	var out []Offer
	seen := map[string]bool{}
	used := map[string]bool{}
	for _, ref := range refs {
		for _, o := range Resolve(ref) {
			if seen[o.Name] {
				continue
			}
			seen[o.Name] = true
			o.Function = unique(o.Function, used)
			used[o.Function] = true
			out = append(out, o)
		}
	}
	return out
}

// Covers reports whether name, as an agent file writes it (a tool, a set,
// a legacy name, an MCP reference), stands for the tool whose canonical
// name is tool: `edit` covers `edit/editFiles`, so does `editFiles`.
func Covers(name, tool string) bool {
	if name == tool {
		return true
	}
	for _, o := range Resolve(name) {
		if o.Name == tool {
			return true
		}
	}
	return false
}

// Overlaps reports whether the references a and b stand for a common tool.
func Overlaps(a, b string) bool {
	for _, o := range Resolve(a) {
		if Covers(b, o.Name) {
			return true
		}
	}
	return false
}

// Lookup returns the table tool whose full reference name is name.
func Lookup(name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Tools returns a copy of the table's tools, in table order.
func Tools() []Tool {
	out := make([]Tool, len(tools))
	copy(out, tools)
	return out
}

// Sets returns a copy of the table's tool sets.
func Sets() []Set {
	out := make([]Set, 0, len(sets))
	for _, s := range sets {
		out = append(out, Set{Name: s.Name, Members: append([]string(nil), s.Members...)})
	}
	return out
}

// LegacyNames returns every older name the table resolves (bare member
// names included), each with the tools it stands for.
func LegacyNames() map[string][]string {
	out := map[string][]string{}
	for k, v := range legacyTools {
		out[k] = []string{v}
	}
	for k, v := range legacySets {
		out[k] = append([]string(nil), v...)
	}
	for _, t := range tools {
		if _, bare, ok := strings.Cut(t.Name, "/"); ok {
			if _, taken := out[bare]; !taken && !isTableSet(bare) {
				out[bare] = []string{t.Name}
			}
		}
	}
	return out
}

func findSet(name string) (Set, bool) {
	for _, s := range sets {
		if s.Name == name {
			return s, true
		}
	}
	return Set{}, false
}

func isTableSet(name string) bool {
	_, ok := findSet(name)
	_, legacy := legacySets[name]
	return ok || legacy
}

// canonicalTool maps a current or legacy tool reference to its full
// reference name.
func canonicalTool(ref string) (string, bool) {
	if _, ok := Lookup(ref); ok {
		return ref, true
	}
	if name, ok := legacyTools[ref]; ok {
		return name, true
	}
	if strings.Contains(ref, "/") || isTableSet(ref) {
		return "", false
	}
	for _, t := range tools {
		if _, bare, ok := strings.Cut(t.Name, "/"); ok && bare == ref {
			return t.Name, true
		}
	}
	return "", false
}

func builtins(ref string, names []string) []Offer {
	out := make([]Offer, 0, len(names))
	for _, n := range names {
		t, _ := Lookup(n)
		ids := append([]string{t.ID}, t.IDs...)
		out = append(out, Offer{Name: t.Name, Reference: ref, Function: functionName(t.Name), Kind: KindBuiltin,
			Description: t.Description, Schema: t.Schema, IDs: ids})
	}
	return out
}

// functionName maps a reference to a name an endpoint accepts: `/` becomes
// `_`, a trailing `/*` becomes `_all`, any other byte outside
// [A-Za-z0-9_-] becomes `_`, cut at 64 bytes.
func functionName(ref string) string {
	if server, ok := strings.CutSuffix(ref, "/*"); ok {
		ref = server + "_all"
	}
	b := []byte(ref)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		b = []byte("tool")
	}
	if len(b) > MaxFunctionBytes {
		b = b[:MaxFunctionBytes]
	}
	return string(b)
}

// unique returns fn, or fn with the smallest suffix _N that used does not
// hold (cut to stay within 64 bytes).
func unique(fn string, used map[string]bool) string {
	if !used[fn] {
		return fn
	}
	for n := 2; ; n++ {
		suffix := "_" + strconv.Itoa(n)
		base := fn
		if len(base)+len(suffix) > MaxFunctionBytes {
			base = base[:MaxFunctionBytes-len(suffix)]
		}
		if c := base + suffix; !used[c] {
			return c
		}
	}
}
