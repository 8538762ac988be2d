package protocolgen

import (
	"encoding/json"
	"strings"
	"testing"
)

type Kind string

type Inner struct {
	N int `json:"n"`
}

type Base struct {
	ID string `json:"id"`
}

type Outer struct {
	Base
	Name    string            `json:"name"`
	Kind    Kind              `json:"kind"`
	Opt     string            `json:"opt,omitempty"`
	Ptr     *Inner            `json:"ptr"`
	List    []Inner           `json:"list"`
	Map     map[string]int    `json:"map,omitempty"`
	Any     any               `json:"any"`
	Raw     json.RawMessage   `json:"raw"`
	Skipped string            `json:"-"`
	Dashed  string            `json:"x-dashed"`
	Nested  map[string][]Kind `json:"nested"`
	private int               //lint:ignore U1000 proves unexported fields are left out
}

type BadMap struct {
	M map[int]string `json:"m"`
}

type Anon struct {
	A struct{ X int } `json:"a"`
}

func TestGenerateMapsGoTypes(t *testing.T) {
	out, err := Generate(Spec{
		Header:   []string{"generated"},
		Consts:   []Const{{Name: "Version", Value: "v1", Doc: "the version"}},
		Groups:   []Group{{Name: "Methods", Entries: []Const{{Name: "Run", Value: "x/run"}}}},
		Requests: []Request{{Method: "x/run", Params: Outer{}, Result: Inner{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"// generated\n",
		"export const Version = \"v1\";",
		"export const Methods = {\n  Run: \"x/run\",\n} as const;",
		"\"x/run\": { params: Outer; result: Inner };",
		"export interface Outer {\n  id: string;\n  name: string;\n  kind: Kind;\n  opt?: string;\n  ptr?: Inner;\n  list: Inner[] | null;\n  map?: Record<string, number>;\n  any: unknown;\n  raw: unknown;\n  \"x-dashed\": string;\n  nested: Record<string, Kind[]> | null;\n}",
		"export type Kind = string;",
		"export interface Inner {\n  n: number;\n}",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q\n---\n%s", want, got)
		}
	}
	for _, absent := range []string{"Skipped", "private", "Base"} {
		if strings.Contains(got, absent) {
			t.Errorf("output has %q, which must be left out\n%s", absent, got)
		}
	}
}

func TestGenerateRefusesWhatJSONCannotSay(t *testing.T) {
	for name, root := range map[string]any{"int map keys": BadMap{}, "anonymous struct": Anon{}} {
		t.Run(name, func(t *testing.T) {
			if _, err := Generate(Spec{Types: []any{root}}); err == nil {
				t.Fatal("Generate accepted a type it cannot map")
			}
		})
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	spec := Spec{Requests: []Request{{Method: "a", Params: Outer{}, Result: Inner{}}}}
	a, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, _ := Generate(spec)
		if string(a) != string(b) {
			t.Fatal("two runs differ")
		}
	}
}
