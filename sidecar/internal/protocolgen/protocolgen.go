// Package protocolgen makes everything that crosses the language boundary
// from the Go contract of the editor (sidecar/internal/lsp's contract.go
// and contract_manifest.go), so the contract is written once, in Go:
//
//   - the TypeScript declarations (protocolgen.go: the generic
//     Go-to-TypeScript mapping by reflection, which knows nothing about kmx
//     beyond the Spec it is handed; kmx.go: kmx's Spec);
//   - package.json's commands and settings, and docs/protocol.md's tables
//     (manifest.go, kmx.go);
//   - the language server's dispatch table of its custom methods
//     (dispatch.go), as gopls generates command.Dispatch.
//
// It only returns bytes; sidecar/cmd/kmx-protocolgen (make protocol) writes
// them, and this package's tests fail when a committed file is stale.
package protocolgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Spec is what to generate.
type Spec struct {
	// Header is emitted first, as line comments.
	Header []string
	// Consts are emitted as `export const NAME = VALUE;` in order.
	Consts []Const
	// Groups are emitted as `export const NAME = { KEY: VALUE, ... } as const;`.
	Groups []Group
	// Requests are emitted as one interface mapping each method to its
	// params and result types, plus every type they reach.
	RequestsName string
	Requests     []Request
	// ClientRequests are the server → client requests, emitted as a second
	// interface named ClientRequestsName.
	ClientRequestsName string
	ClientRequests     []Request
	// Types are extra roots to emit (with everything they reach).
	Types []any
}

// Const is one constant.
type Const struct {
	Name  string
	Value any
	Doc   string
}

// Group is a named set of string constants.
type Group struct {
	Name    string
	Doc     string
	Entries []Const
	// Union, when set, also emits `export type Union = ...` of the
	// group's values, so the other side can type a field with exactly
	// these names.
	Union string
}

// Request is one method and its params and result types.
type Request struct {
	Method string
	Params any
	Result any
	Doc    string
}

// Generate returns the TypeScript source for spec. The output is
// deterministic: types are emitted in the order first reached.
func Generate(spec Spec) ([]byte, error) {
	g := &gen{names: map[reflect.Type]string{}, taken: map[string]reflect.Type{}}
	for _, r := range append(append([]Request(nil), spec.Requests...), spec.ClientRequests...) {
		g.reach(reflect.TypeOf(r.Params))
		g.reach(reflect.TypeOf(r.Result))
	}
	for _, t := range spec.Types {
		g.reach(reflect.TypeOf(t))
	}
	if g.err != nil {
		return nil, g.err
	}
	var b bytes.Buffer
	for _, h := range spec.Header {
		fmt.Fprintf(&b, "// %s\n", h)
	}
	b.WriteString("\n/* eslint-disable */\n")
	for _, c := range spec.Consts {
		doc(&b, "", c.Doc)
		v, err := json.Marshal(c.Value)
		if err != nil {
			return nil, fmt.Errorf("const %s: %w", c.Name, err)
		}
		fmt.Fprintf(&b, "export const %s = %s;\n", c.Name, v)
	}
	for _, gr := range spec.Groups {
		b.WriteString("\n")
		doc(&b, "", gr.Doc)
		fmt.Fprintf(&b, "export const %s = {\n", gr.Name)
		for _, e := range gr.Entries {
			doc(&b, "  ", e.Doc)
			v, err := json.Marshal(e.Value)
			if err != nil {
				return nil, fmt.Errorf("group %s: %s: %w", gr.Name, e.Name, err)
			}
			fmt.Fprintf(&b, "  %s: %s,\n", e.Name, v)
		}
		b.WriteString("} as const;\n")
		if gr.Union != "" {
			fmt.Fprintf(&b, "export type %s = (typeof %s)[keyof typeof %s];\n", gr.Union, gr.Name, gr.Name)
		}
	}
	g.requests(&b, spec.Requests, spec.RequestsName, "Requests", "Each custom method with its params and result.")
	g.requests(&b, spec.ClientRequests, spec.ClientRequestsName, "ClientRequests", "Each server → client method with its params and result.")
	for _, t := range g.order {
		b.WriteString("\n")
		g.emit(&b, t)
	}
	if g.err != nil {
		return nil, g.err
	}
	return b.Bytes(), nil
}

type gen struct {
	order []reflect.Type
	names map[reflect.Type]string
	taken map[string]reflect.Type
	err   error
}

// reach records t and every named type it reaches, in first-reached order.
func (g *gen) reach(t reflect.Type) {
	if t == nil {
		return
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		g.reach(t.Elem())
		return
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			g.fail(fmt.Errorf("%s: map keys must be strings to be JSON objects", t))
		}
		g.reach(t.Elem())
		return
	}
	if t.Name() == "" || isBuiltin(t) {
		if t.Kind() == reflect.Struct && t.Name() == "" {
			g.fail(fmt.Errorf("anonymous struct %s: give it a name so both sides can refer to it", t))
		}
		return
	}
	if _, ok := g.names[t]; ok {
		return
	}
	name := t.Name()
	if qualifiedPackages[pkgName(t)] {
		// compare.Result, compare.Column: names that say nothing alone.
		name = exported(pkgName(t)) + name
	}
	if other, clash := g.taken[name]; clash && other != t {
		// Two packages use the same name: qualify the later one.
		name = exported(pkgName(t)) + name
	}
	g.names[t] = name
	g.taken[name] = t
	g.order = append(g.order, t)
	if t.Kind() == reflect.Struct {
		for _, f := range fields(t) {
			g.reach(f.typ)
		}
	}
}

func (g *gen) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// isBuiltin reports types that map to TypeScript primitives whatever their
// name (json.RawMessage, time.Time).
func isBuiltin(t reflect.Type) bool {
	switch t.PkgPath() + "." + t.Name() {
	case "encoding/json.RawMessage", "time.Time", "time.Duration":
		return true
	}
	return t.PkgPath() == ""
}

type field struct {
	name     string
	typ      reflect.Type
	optional bool
}

// fields lists t's JSON fields as encoding/json would, flattening embedded
// structs without a json name.
func fields(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, fields(et)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,") || f.Type.Kind() == reflect.Pointer
		out = append(out, field{name: name, typ: f.Type, optional: optional})
	}
	return out
}

// ts is the TypeScript type expression for t.
func (g *gen) ts(t reflect.Type) string {
	if t == nil {
		return "null"
	}
	if n, ok := g.names[t]; ok {
		return n
	}
	switch t.PkgPath() + "." + t.Name() {
	case "encoding/json.RawMessage":
		return "unknown"
	case "time.Time":
		return "string"
	case "time.Duration":
		return "number"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.ts(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		el := g.ts(t.Elem())
		if t.Elem().Kind() == reflect.Pointer {
			// A nil element encodes as null.
			el += " | null"
		}
		if strings.ContainsAny(el, " |") {
			el = "(" + el + ")"
		}
		return el + "[]"
	case reflect.Map:
		return "Record<string, " + g.ts(t.Elem()) + ">"
	case reflect.Interface:
		return "unknown"
	}
	g.fail(fmt.Errorf("%s: no TypeScript mapping for kind %s", t, t.Kind()))
	return "unknown"
}

func (g *gen) emit(b *bytes.Buffer, t reflect.Type) {
	name := g.names[t]
	src := fmt.Sprintf("Go: %s.%s", pkgName(t), t.Name())
	if t.Kind() != reflect.Struct {
		fmt.Fprintf(b, "/** %s */\nexport type %s = %s;\n", src, name, g.underlying(t))
		return
	}
	fmt.Fprintf(b, "/** %s */\nexport interface %s {\n", src, name)
	for _, f := range fields(t) {
		opt := ""
		typ := g.ts(f.typ)
		if f.optional {
			opt = "?"
		} else if nullable(f.typ) {
			typ += " | null"
		}
		fmt.Fprintf(b, "  %s%s: %s;\n", tsKey(f.name), opt, typ)
	}
	b.WriteString("}\n")
}

// nullable reports Go types whose zero value encodes as null (a nil slice
// or map without omitempty); unknown already includes null.
func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice, reflect.Map:
		return t.PkgPath()+"."+t.Name() != "encoding/json.RawMessage"
	}
	return false
}

// underlying is the alias body of a named non-struct type.
func (g *gen) underlying(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return g.ts(t.Elem()) + "[]"
	case reflect.Map:
		return "Record<string, " + g.ts(t.Elem()) + ">"
	case reflect.Interface:
		return "unknown"
	}
	return "number"
}

func tsKey(k string) string {
	for i, r := range k {
		ok := r == '_' || r == '$' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || (i > 0 && '0' <= r && r <= '9')
		if !ok {
			return strconv.Quote(k)
		}
	}
	return k
}

func doc(b *bytes.Buffer, indent, text string) {
	if text != "" {
		fmt.Fprintf(b, "%s/** %s */\n", indent, text)
	}
}

// qualifiedPackages are the packages whose types are always named with the
// package's name first in TypeScript: their own names (Result, Column,
// Row, Cell) are too general to stand alone among the contract's.
var qualifiedPackages = map[string]bool{"compare": true}

func pkgName(t reflect.Type) string {
	p := t.PkgPath()
	if i := strings.LastIndex(p, "/"); i >= 0 {
		p = p[i+1:]
	}
	return p
}

func exported(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// SortedKeys returns m's keys in order (for deterministic groups).
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// requests writes one interface mapping each method of rs to its params
// and result types, named name (or fallback when name is empty); nothing
// when rs is empty.
func (g *gen) requests(b *bytes.Buffer, rs []Request, name, fallback, comment string) {
	if len(rs) == 0 {
		return
	}
	if name == "" {
		name = fallback
	}
	fmt.Fprintf(b, "\n/** %s */\nexport interface %s {\n", comment, name)
	for _, r := range rs {
		doc(b, "  ", r.Doc)
		fmt.Fprintf(b, "  %s: { params: %s; result: %s };\n", strconv.Quote(r.Method), g.ts(reflect.TypeOf(r.Params)), g.ts(reflect.TypeOf(r.Result)))
	}
	b.WriteString("}\n")
}
