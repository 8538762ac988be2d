package mcpserver_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/mcpserver"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
	"github.com/kmxdev/kmx/sidecar/internal/testutil/transcript"
)

var updateTranscripts = flag.Bool("update", false, "rewrite testdata/transcripts/*.ct from what the server answers now")

// TestTranscripts replays the MCP sessions in testdata/transcripts/*.ct
// through a real MCP client (the go-sdk's, over in-memory transports) and
// compares what the server answers with what the file says, so tool
// descriptions, refusals and summaries are reviewed as an MCP client's
// model sees them. go test ./sidecar/internal/mcpserver -run TestTranscripts
// -update rewrites them from what the server answers now (review the diff).
//
// A .ct file is a txtar archive (package transcript). Its files are written
// to a fresh folder, the server's only root, which $WORK names; $KMX_HOME
// is the state folder (one per transcript). The commands:
//
//	> tools/list                 every tool: name, title, annotations,
//	                             description and arguments; ends [ok]
//	> TOOL {JSON arguments}      one tools/call: its text content, then
//	                             its structured content's keys; ends
//	                             [isError true|false]
//
// Output is normalised as the CLI's transcripts are (run IDs, paths,
// durations, sizes, times, the version).
func TestTranscripts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.ct"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no transcripts in testdata/transcripts (%v)", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".ct")
		t.Run(name, func(t *testing.T) {
			how := fmt.Sprintf("go test ./sidecar/internal/mcpserver -run 'TestTranscripts/%s' -update", name)
			transcript.Run(t, path, ">", *updateTranscripts, how, func(work string) transcript.Runner {
				home := testutil.PrivateDir(t)
				n := &transcript.Normalizer{Vars: map[string]string{"$WORK": work, "$KMX_HOME": home}}
				cs := connect(t, mcpserver.Config{Version: "test", Roots: []string{work}, ExplicitRoots: true,
					Getenv: envWith(map[string]string{"KMX_HOME": home})})
				return func(command string) (string, string, error) {
					return mcpCommand(cs, n, command)
				}
			})
		})
	}
}

func mcpCommand(cs *mcp.ClientSession, n *transcript.Normalizer, command string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, raw, _ := strings.Cut(command, " ")
	if name == "tools/list" {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			return "", "", err
		}
		var b strings.Builder
		for _, tool := range res.Tools {
			fmt.Fprintf(&b, "%s: %s\n", tool.Name, tool.Title)
			if a := tool.Annotations; a != nil {
				fmt.Fprintf(&b, "  readOnly %v, openWorld %v\n", a.ReadOnlyHint, a.OpenWorldHint != nil && *a.OpenWorldHint)
			}
			fmt.Fprintf(&b, "  %s\n", tool.Description)
			fmt.Fprintf(&b, "  arguments: %s\n", arguments(tool.InputSchema))
		}
		return n.Normalize(b.String()), "ok", nil
	}
	var args map[string]any
	if raw != "" {
		if err := json.Unmarshal([]byte(n.Expand(raw)), &args); err != nil {
			return "", "", fmt.Errorf("the arguments of %s are not a JSON object: %v", name, err)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", "", fmt.Errorf("protocol error (a tool problem must be an isError result): %v", err)
	}
	out := text(res) + "\n"
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			out += "structured: " + strings.Join(keys, ", ") + "\n"
		}
	}
	return n.Normalize(out), fmt.Sprintf("isError %v", res.IsError), nil
}

// arguments names a tool's input schema's properties, required ones marked.
func arguments(schema any) string {
	b, _ := json.Marshal(schema)
	var s struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if json.Unmarshal(b, &s) != nil || len(s.Properties) == 0 {
		return "none"
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	for i, k := range names {
		for _, r := range s.Required {
			if r == k {
				names[i] += " (required)"
			}
		}
	}
	return strings.Join(names, ", ")
}
