package localtools

import (
	"slices"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

func TestParseSettings(t *testing.T) {
	declared := []string{"a", "b"}
	tests := []struct {
		name, src, want string
		states          map[string]string
	}{
		{name: "empty", src: "", states: nil},
		{name: "other keys left alone", src: "# comment\nother: 1\ntools:\n  a: Disabled\n", states: map[string]string{"a": "Disabled"}},
		{name: "quoted state", src: "tools:\n  b: \"Enabled\"\n", states: map[string]string{"b": "Enabled"}},
		{name: "null tools", src: "tools:\n", states: nil},
		{name: "not a mapping", src: "[1]\n", want: "top level must be a mapping"},
		{name: "tools a list", src: "tools: [a]\n", want: "tools must be a mapping"},
		{name: "duplicate tool", src: "tools:\n  a: Enabled\n  a: Disabled\n", want: `key "a" twice`},
		{name: "duplicate top key", src: "tools: {}\ntools: {}\n", want: `key "tools" twice`},
		{name: "tab", src: "tools:\n  a:\tEnabled\n", want: "tab"},
		{name: "alias", src: "s: &x Disabled\ntools:\n  a: *x\n", want: "anchor or alias"},
		{name: "merge key", src: "base: {a: Disabled}\ntools:\n  <<: {a: Disabled}\n", want: "merge key"},
		{name: "Ask", src: "tools:\n  a: Ask\n", want: "Ask, which is not supported yet"},
		{name: "lower case", src: "tools:\n  a: enabled\n", want: "unknown state"},
		{name: "boolean", src: "tools:\n  a: true\n", want: "Enabled or Disabled"},
		{name: "undeclared", src: "tools:\n  c: Enabled\n", want: `"c", which no agent file in this folder declares`},
		{name: "two documents", src: "tools: {}\n---\ntools: {}\n", want: "more than one YAML document"},
		{name: "broken", src: "tools: [\n", want: "not valid YAML"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			states, err := ParseSettings([]byte(tc.src), func(n string) bool { return slices.Contains(declared, n) })
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Problem, tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if len(states) != len(tc.states) {
				t.Fatalf("states = %v, want %v", states, tc.states)
			}
			for k, v := range tc.states {
				if states[k] != v {
					t.Errorf("%s = %q, want %q", k, states[k], v)
				}
			}
		})
	}
}

func TestFreezeGivesEveryDeclaredNameASource(t *testing.T) {
	settings := Settings{States: []ToolState{{"off", Disabled}, {"saved", Enabled}, {"pending", Enabled}, {"none", Enabled}}}
	recs := []agentfile.ToolRecording{
		{Tool: "off", Calls: []agentfile.RecordedCall{{Arguments: "{}", Result: `"x"`}}},
		{Tool: "saved", Calls: []agentfile.RecordedCall{{Arguments: `{"a":1,"b":[2]}`, Result: `{"ok":true}`}}},
		{Tool: "pending", Pending: true},
	}
	set, err := Freeze(settings, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{SourceDisabled, SourceRecorded, SourceUnavailable, SourceUnavailable}
	if len(set) != len(want) {
		t.Fatalf("set = %+v", set)
	}
	for i, w := range want {
		if set[i].Source != w {
			t.Errorf("%s source = %q, want %q", set[i].Name, set[i].Source, w)
		}
	}
	a, _ := Dispatch(set[1], `{ "b": [2], "a": 1 }`)
	if a.Source != SourceRecorded || a.Text != `{"ok":true}` || !a.Dispatched {
		t.Errorf("equal JSON arguments: %+v", a)
	}
	a, _ = Dispatch(set[1], `{"a":2}`)
	if a.Source != SourceUnavailable || a.Text != UnavailableText {
		t.Errorf("other arguments: %+v", a)
	}
	a, _ = Dispatch(set[0], "{}")
	if a.Source != SourceDisabled || a.Text != DisabledText || a.Dispatched {
		t.Errorf("disabled: %+v", a)
	}
}

// A tool two declared references stand for is Disabled when either is,
// whichever brought it in first: `codebase: Disabled` beside `search`
// disables search/codebase, and only it.
func TestFreezeDisablesAToolAnyOfItsReferencesDisables(t *testing.T) {
	for _, order := range [][]ToolState{
		{{"search", Enabled}, {"codebase", Disabled}},
		{{"codebase", Disabled}, {"search", Enabled}},
	} {
		set, err := Freeze(Settings{States: order}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		states := map[string]string{}
		for _, tool := range set {
			states[tool.Name] = tool.Source
		}
		if len(set) != 7 || states["search/codebase"] != SourceDisabled || states["search/usages"] != SourceUnavailable || states["search/changes"] != SourceUnavailable {
			t.Errorf("%v: sources %v", order, states)
		}
	}
}

func TestFreezeRefusesOversizedRecordedResult(t *testing.T) {
	settings := Settings{States: []ToolState{{"t", Enabled}}}
	big := `"` + strings.Repeat("r", MaxResultBytes-1) + `"`
	_, err := Freeze(settings, []agentfile.ToolRecording{{Tool: "t", Calls: []agentfile.RecordedCall{{Arguments: "{}", Result: big}}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "32 KiB") {
		t.Errorf("err = %v", err)
	}
}
