package lsp

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

// Tool states kmx.yaml may give.
const (
	toolEnabled  = "Enabled"
	toolDisabled = "Disabled"
)

// maxToolSettings bounds the kmx.yaml read: it is a short list of names.
const maxToolSettings = 64 << 10

// readToolSettings reads kmx.yaml beside the agent file (never a parent
// folder or the workspace) and returns each declared tool's state, missing
// meaning Enabled. It only displays settings: the runner decides again from
// the file when it runs. (This belongs in a localtools package once one
// exists; the lens only needs the display.)
func readToolSettings(agentPath string, tools []agentfile.Tool) ToolSettings {
	out := ToolSettings{States: []ToolState{}}
	if agentPath == "" {
		return withStates(out, tools, nil)
	}
	path := filepath.Join(filepath.Dir(agentPath), "kmx.yaml")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return withStates(out, tools, nil)
	}
	if err != nil {
		out.Error = "kmx.yaml cannot be opened; fix its permissions or remove it"
		return out
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxToolSettings+1))
	if err != nil {
		out.Error = "kmx.yaml cannot be read; fix its permissions or remove it"
		return out
	}
	if len(data) > maxToolSettings {
		out.Error = "kmx.yaml is larger than 64 KiB; keep only the tools settings in it"
		return out
	}
	states, problem := parseToolSettings(data)
	if problem != "" {
		out.Error = "kmx.yaml is invalid: " + problem + "; fix kmx.yaml (tools: {NAME: Enabled|Disabled})"
		return out
	}
	return withStates(out, tools, states)
}

func withStates(out ToolSettings, tools []agentfile.Tool, states map[string]string) ToolSettings {
	for _, t := range tools {
		st := toolEnabled
		if v, ok := states[t.Name]; ok {
			st = v
		}
		out.States = append(out.States, ToolState{Name: t.Name, State: st, Range: t.Range})
	}
	return out
}

// parseToolSettings decodes `tools: {NAME: Enabled|Disabled}`. Other
// top-level keys are left alone; a duplicate key, a non-mapping tools value
// or any state but Enabled/Disabled is refused ("Ask" is not supported).
func parseToolSettings(src []byte) (map[string]string, string) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, err.Error()
	}
	if len(root.Content) == 0 {
		return nil, ""
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, fmt.Sprintf("line %d: the top level must be a mapping", doc.Line)
	}
	var tools *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "tools" {
			tools = doc.Content[i+1]
		}
	}
	if tools == nil || tools.Tag == "!!null" {
		return nil, ""
	}
	if tools.Kind != yaml.MappingNode {
		return nil, fmt.Sprintf("line %d: tools must be a mapping of tool names to Enabled or Disabled", tools.Line)
	}
	states := map[string]string{}
	for i := 0; i+1 < len(tools.Content); i += 2 {
		k, v := tools.Content[i], tools.Content[i+1]
		if _, dup := states[k.Value]; dup {
			return nil, fmt.Sprintf("line %d: tool %q is listed twice", k.Line, k.Value)
		}
		if v.Kind != yaml.ScalarNode || (v.Value != toolEnabled && v.Value != toolDisabled) {
			return nil, fmt.Sprintf("line %d: tool %q has state %q; use Enabled or Disabled (Ask is not supported yet)", v.Line, k.Value, v.Value)
		}
		states[k.Value] = v.Value
	}
	return states, ""
}
