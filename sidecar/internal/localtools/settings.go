package localtools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

// SettingsFile is the folder settings file, read beside the agent file only.
const SettingsFile = "kmx.yaml"

// MaxSettingsBytes bounds the kmx.yaml read: it is a short list of names.
const MaxSettingsBytes = 64 << 10

// Tool states kmx.yaml may give. A missing file or name means Enabled.
const (
	Enabled  = "Enabled"
	Disabled = "Disabled"
)

// Settings is the effective state of every declared tool, frozen when read.
type Settings struct {
	// Path is the kmx.yaml that was read, empty when there is none.
	Path string
	// States holds one entry per declared tool, in declaration order.
	States []ToolState
}

// Revision is a digest of the settings' states: a run's result records it
// (settingsRevision), and a result whose digest differs from today's
// kmx.yaml is out of date even when the agent file is unchanged. Empty when
// no tool is declared.
func (s Settings) Revision() string {
	if len(s.States) == 0 {
		return ""
	}
	b, _ := json.Marshal(s.States)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// ToolState is one declared tool and its state.
type ToolState struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// State returns name's state ("" when name is not declared).
func (s Settings) State(name string) string {
	for _, st := range s.States {
		if st.Name == name {
			return st.State
		}
	}
	return ""
}

// SettingsError is a kmx.yaml that cannot be used. Line and Column are
// one-based, zero when the problem is the file as a whole. Message never
// echoes the file's content beyond a tool name or state.
type SettingsError struct {
	Path    string
	Line    int
	Column  int
	Problem string
}

func (e *SettingsError) Error() string {
	where := e.Path
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", e.Path, e.Line, e.Column)
	}
	return where + ": " + e.Problem
}

// Short names the problem against the bare file name, for an editor that
// shows it beside the agent file: "kmx.yaml:2:9: ...".
func (e *SettingsError) Short() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", SettingsFile, e.Line, e.Column, e.Problem)
	}
	return SettingsFile + ": " + e.Problem
}

// NextStep says what to change (problem.Problem); it is the same for
// every kmx.yaml problem.
func (e *SettingsError) NextStep() string {
	return "fix " + e.Path + " (tools: {NAME: Enabled|Disabled}, one entry per tool an agent file in its folder declares), or remove it; kmx never rewrites it"
}

// SettingsPath is the kmx.yaml kmx reads for the agent file at agentPath.
func SettingsPath(agentPath string) string {
	return filepath.Join(filepath.Dir(agentPath), SettingsFile)
}

// ReadSettings reads kmx.yaml beside agentPath and returns every declared
// tool's state. A missing file means every tool is Enabled. kmx.yaml holds
// the folder's settings, so it may name tools other agent files in the
// folder declare: those names are ignored for this agent. Anything else
// that is not a plain, unambiguous `tools: {NAME: Enabled|Disabled}` (a
// symlink, more than 64 KiB, tabs, anchors or aliases, duplicate keys, an
// unknown state, a name no agent file in the folder declares) is a
// *SettingsError: the preview is refused before anything is created or sent.
func ReadSettings(agentPath string, declared []string) (Settings, error) {
	out := Settings{}
	if agentPath == "" {
		return withStates(out, declared, nil), nil
	}
	own := make(map[string]bool, len(declared))
	for _, n := range declared {
		own[n] = true
	}
	var folder map[string]bool
	known := func(name string) bool {
		if own[name] {
			return true
		}
		if folder == nil {
			// Only when kmx.yaml names a tool this agent does not
			// declare: the other agent files are parsed from disk.
			folder = FolderDeclared(filepath.Dir(agentPath), agentPath)
		}
		return folder[name]
	}
	path := SettingsPath(agentPath)
	states, found, serr := readSettingsFile(path, known)
	if serr != nil {
		// Not through a nil *SettingsError in an error.
		return Settings{}, serr
	}
	if !found {
		return withStates(out, declared, nil), nil
	}
	out.Path = path
	return withStates(out, declared, states), nil
}

// CheckFolderSettings checks the kmx.yaml in dir, if there is one, as
// ReadSettings does for any agent file in dir: kmx check reports its
// problems as diagnostics on kmx.yaml.
func CheckFolderSettings(dir string) (found bool, err *SettingsError) {
	folder := FolderDeclared(dir, "")
	_, found, rerr := readSettingsFile(filepath.Join(dir, SettingsFile), func(n string) bool { return folder[n] })
	if rerr != nil {
		return true, rerr
	}
	return found, nil
}

// FolderDeclared returns every tool name the agent files in dir declare:
// each regular *.agent.md directly in dir, and every .md when dir is a
// .github/agents folder (VS Code reads each as an agent), parsed from
// disk. except (an agent file whose names the caller already has, perhaps
// from an unsaved buffer) is skipped. A file that cannot be read adds
// nothing.
func FolderDeclared(dir, except string) map[string]bool {
	out := map[string]bool{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	agentsFolder := filepath.Base(dir) == "agents" && filepath.Base(filepath.Dir(dir)) == ".github"
	if abs, err := filepath.Abs(dir); err == nil {
		agentsFolder = filepath.Base(abs) == "agents" && filepath.Base(filepath.Dir(abs)) == ".github"
	}
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !(strings.HasSuffix(name, ".agent.md") || (agentsFolder && strings.HasSuffix(name, ".md"))) {
			continue
		}
		p := filepath.Join(dir, name)
		if except != "" && filepath.Clean(p) == filepath.Clean(except) {
			continue
		}
		src, err := agentfile.ReadFile(p)
		if err != nil {
			continue
		}
		if res := agentfile.Parse(p, src); res.Agent != nil {
			for _, t := range res.Agent.Tools {
				out[t.Name] = true
			}
		}
	}
	return out
}

// readSettingsFile reads and parses the kmx.yaml at path; found is false
// when there is none.
func readSettingsFile(path string, known func(string) bool) (map[string]string, bool, *SettingsError) {
	bad := func(line, col int, format string, args ...any) (map[string]string, bool, *SettingsError) {
		return nil, true, &SettingsError{Path: path, Line: line, Column: col, Problem: fmt.Sprintf(format, args...)}
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return bad(0, 0, "cannot be inspected (%s)", errClass(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return bad(0, 0, "is a symbolic link; kmx reads only a regular kmx.yaml beside the agent file")
	}
	if !fi.Mode().IsRegular() {
		return bad(0, 0, "is not a regular file")
	}
	if fi.Size() > MaxSettingsBytes {
		return bad(0, 0, "is %d bytes; the limit is 64 KiB: keep only the tools settings in it", fi.Size())
	}
	f, err := os.Open(path)
	if err != nil {
		return bad(0, 0, "cannot be opened (%s)", errClass(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSettingsBytes+1))
	if err != nil {
		return bad(0, 0, "cannot be read (%s)", errClass(err))
	}
	if len(data) > MaxSettingsBytes {
		return bad(0, 0, "is larger than 64 KiB: keep only the tools settings in it")
	}
	states, serr := ParseSettings(data, known)
	if serr != nil {
		serr.Path = path
		return nil, true, serr
	}
	return states, true, nil
}

func errClass(err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	default:
		return "I/O error"
	}
}

func withStates(out Settings, declared []string, states map[string]string) Settings {
	out.States = make([]ToolState, 0, len(declared))
	for _, name := range declared {
		st := Enabled
		if v, ok := states[name]; ok {
			st = v
		}
		out.States = append(out.States, ToolState{Name: name, State: st})
	}
	return out
}

// ParseSettings decodes kmx.yaml's bytes strictly and returns the state of
// each tool it names. known, when not nil, says whether an agent file in
// the folder declares a name: a name no agent file declares is refused (a
// misspelt name would leave the tool meant Enabled or Disabled as it was).
// The returned error has no Path.
func ParseSettings(src []byte, known func(name string) bool) (map[string]string, *SettingsError) {
	if i := strings.IndexByte(string(src), '\t'); i >= 0 {
		line, col := lineCol(src, i)
		return nil, &SettingsError{Line: line, Column: col, Problem: "has a tab; indent with spaces"}
	}
	dec := yaml.NewDecoder(strings.NewReader(string(src)))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, &SettingsError{Problem: "is not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &SettingsError{Problem: "holds more than one YAML document; keep one"}
	}
	if len(root.Content) == 0 {
		return nil, nil
	}
	if err := plain(&root); err != nil {
		return nil, err
	}
	doc := root.Content[0]
	if doc.Kind == yaml.ScalarNode && doc.Tag == "!!null" {
		return nil, nil
	}
	if doc.Kind != yaml.MappingNode {
		return nil, &SettingsError{Line: doc.Line, Column: doc.Column, Problem: "the top level must be a mapping (tools: {NAME: Enabled|Disabled})"}
	}
	var tools *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "tools" {
			tools = doc.Content[i+1]
		}
	}
	if tools == nil || (tools.Kind == yaml.ScalarNode && tools.Tag == "!!null") {
		return nil, nil
	}
	if tools.Kind != yaml.MappingNode {
		return nil, &SettingsError{Line: tools.Line, Column: tools.Column, Problem: "tools must be a mapping of tool names to Enabled or Disabled"}
	}
	states := map[string]string{}
	for i := 0; i+1 < len(tools.Content); i += 2 {
		k, v := tools.Content[i], tools.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" || k.Value == "" {
			return nil, &SettingsError{Line: k.Line, Column: k.Column, Problem: "a tool name must be a plain string"}
		}
		if known != nil && !known(k.Value) {
			return nil, &SettingsError{Line: k.Line, Column: k.Column,
				Problem: fmt.Sprintf("names tool %q, which no agent file in this folder declares: declare it in an agent file's tools or remove it from kmx.yaml", clip(k.Value))}
		}
		if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
			return nil, &SettingsError{Line: v.Line, Column: v.Column, Problem: fmt.Sprintf("tool %q must have the state Enabled or Disabled", k.Value)}
		}
		switch v.Value {
		case Enabled, Disabled:
		case "Ask":
			return nil, &SettingsError{Line: v.Line, Column: v.Column, Problem: fmt.Sprintf("tool %q has state Ask, which is not supported yet: use Enabled or Disabled", k.Value)}
		default:
			return nil, &SettingsError{Line: v.Line, Column: v.Column, Problem: fmt.Sprintf("tool %q has the unknown state %q: use Enabled or Disabled", k.Value, clip(v.Value))}
		}
		states[k.Value] = v.Value
	}
	return states, nil
}

// plain refuses what makes YAML ambiguous to a reader: anchors, aliases,
// merge keys, custom tags and duplicate mapping keys, at any depth.
func plain(n *yaml.Node) *SettingsError {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return &SettingsError{Line: n.Line, Column: n.Column, Problem: "uses a YAML anchor or alias; write every value out"}
	}
	if n.Tag != "" && !strings.HasPrefix(n.Tag, "!!") {
		return &SettingsError{Line: n.Line, Column: n.Column, Problem: "uses a custom YAML tag; remove it"}
	}
	if n.Kind == yaml.MappingNode {
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Tag == "!!merge" {
				return &SettingsError{Line: k.Line, Column: k.Column, Problem: "uses a YAML merge key (<<); write every value out"}
			}
			if seen[k.Value] {
				return &SettingsError{Line: k.Line, Column: k.Column, Problem: fmt.Sprintf("has the key %q twice; keep one", clip(k.Value))}
			}
			seen[k.Value] = true
		}
	}
	for _, c := range n.Content {
		if err := plain(c); err != nil {
			return err
		}
	}
	return nil
}

func lineCol(src []byte, off int) (int, int) {
	line, col := 1, 1
	for _, b := range src[:off] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Names returns the declared names of states, sorted, for messages.
func Names(states []ToolState) []string {
	out := make([]string, 0, len(states))
	for _, s := range states {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}
