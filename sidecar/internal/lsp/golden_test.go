package lsp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

var update = flag.Bool("update", false, "rewrite the transcript section of testdata/lsp/*.txtar")

// goldenFlows drive the server through the main editor flows. Each golden
// file holds the flow's input files and the expected transcript: every
// message the client sent and received, in order, with volatile values
// (temporary paths, run IDs, durations) normalized.
var goldenFlows = map[string]func(r *recorder){
	"initialize.txtar": func(r *recorder) {
		r.call("initialize", map[string]any{
			"capabilities":          map[string]any{"window": map[string]any{"workDoneProgress": true}},
			"initializationOptions": lsp.InitializationOptions{ProtocolVersion: lsp.ProtocolVersion, Settings: lsp.Settings{Model: "fake"}},
		})
		r.notify("initialized", map[string]any{})
		r.call("shutdown", nil)
	},
	"diagnostics.txtar": func(r *recorder) {
		r.handshake()
		uri := r.uri("draft.agent.md")
		r.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "markdown", "version": 1, "text": r.file("draft.agent.md")}})
		r.awaitDiagnostics(uri, 1)
		// Finish the Examples block, then make the ids collide.
		r.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": 2},
			"contentChanges": []any{map[string]any{"range": rng(12, 0, 12, 0), "text": "```\n"}},
		})
		r.awaitDiagnostics(uri, 2)
		r.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": 3},
			"contentChanges": []any{map[string]any{"range": rng(11, 6, 11, 9), "text": "one"}},
		})
		r.awaitDiagnostics(uri, 3)
	},
	"code_actions.txtar": func(r *recorder) {
		r.handshake()
		// A VS Code agent with no examples: the Add examples lens and
		// quick fix, both carrying the skeleton edit.
		plain := r.uri("csharp-expert.agent.md")
		r.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": plain, "languageId": "chatagent", "version": 1, "text": r.file("csharp-expert.agent.md")}})
		r.awaitDiagnostics(plain, 1)
		r.call("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": plain}})
		r.call("textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": plain}, "range": rng(0, 0, 0, 0), "context": map[string]any{"diagnostics": []any{}}})
		// Duplicate id, an example without assert and an unclosed block.
		draft := r.uri("draft.agent.md")
		r.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": draft, "languageId": "chatagent", "version": 1, "text": r.file("draft.agent.md")}})
		r.awaitDiagnostics(draft, 1)
		r.call("textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": draft}, "range": rng(0, 0, 30, 0), "context": map[string]any{"diagnostics": []any{}}})
	},
	"lenses.txtar": func(r *recorder) {
		r.handshake()
		uri := r.uri("tooled.agent.md")
		r.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "markdown", "version": 1, "text": r.file("tooled.agent.md")}})
		r.awaitDiagnostics(uri, 1)
		r.call("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": uri}})
		r.call(lsp.MethodExamples, lsp.DocumentParams{URI: uri})
	},
	"test.txtar": func(r *recorder) {
		r.handshake()
		uri := r.uri("greeter.agent.md")
		r.call("workspace/executeCommand", map[string]any{"command": lsp.CommandTestFile, "arguments": []any{lsp.TestParams{URI: uri}}})
		r.call("workspace/executeCommand", map[string]any{"command": lsp.CommandRunExample, "arguments": []any{lsp.ExampleParams{URI: uri, ExampleID: "first"}}})
	},
}

func TestGoldenTranscripts(t *testing.T) {
	dir := filepath.Join(moduleRootTB(t), "testdata", "lsp")
	for name, flow := range goldenFlows {
		t.Run(strings.TrimSuffix(name, ".txtar"), func(t *testing.T) {
			path := filepath.Join(dir, name)
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatalf("%v (create it with its input files and run go test -run TestGoldenTranscripts -update)", err)
			}
			work := t.TempDir()
			r := &recorder{t: t, work: work, files: map[string]string{}}
			var want []byte
			for _, f := range ar.Files {
				if f.Name == "transcript" {
					want = f.Data
					continue
				}
				r.files[f.Name] = string(f.Data)
				if err := os.WriteFile(filepath.Join(work, f.Name), f.Data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r.c = startServer(t, lsp.Options{Version: "test"})
			flow(r)
			got := r.out.Bytes()
			if *update {
				var files []txtar.File
				for _, f := range ar.Files {
					if f.Name != "transcript" {
						files = append(files, f)
					}
				}
				ar.Files = append(files, txtar.File{Name: "transcript", Data: got})
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("transcript differs from %s (run with -update if the change is intended)\n--- got\n%s", path, got)
			}
		})
	}
}

// recorder drives a client and writes what it sends and receives.
type recorder struct {
	t     *testing.T
	c     *client
	work  string
	files map[string]string
	out   bytes.Buffer
	seen  int
}

func (r *recorder) uri(name string) string { return fileURI(filepath.Join(r.work, name)) }
func (r *recorder) file(name string) string {
	text, ok := r.files[name]
	if !ok {
		r.t.Fatalf("the golden file has no input %q", name)
	}
	return text
}

func (r *recorder) handshake() {
	// One example at a time: a transcript fixes the order of progress
	// messages, which at a higher concurrency is the order examples finish.
	r.c.initialize(lsp.InitializationOptions{ProtocolVersion: lsp.ProtocolVersion, Settings: lsp.Settings{Concurrency: 1}})
	r.seen = r.c.count()
}

func (r *recorder) call(method string, params any) {
	r.t.Helper()
	r.write("→ request "+method, params)
	var res json.RawMessage
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err := r.c.conn.Call(ctx, method, params, &res)
	r.flushReceived()
	if err != nil {
		r.write("← error", map[string]any{"code": rpcCode(err), "message": err.Error()})
		return
	}
	r.write("← response", res)
}

func (r *recorder) notify(method string, params any) {
	r.t.Helper()
	r.write("→ notification "+method, params)
	r.c.notify(method, params)
}

// awaitDiagnostics waits for the diagnostics of one version and records
// every message received up to it.
func (r *recorder) awaitDiagnostics(uri string, version int32) {
	r.t.Helper()
	_, i := r.c.diagnosticsFor(r.seen, uri, version)
	r.flushUpTo(i + 1)
}

// flushReceived records what the server sent during a call. The server
// sends a request's progress before its reply, so by the time the reply is
// here its progress has been received too.
func (r *recorder) flushReceived() { r.flushUpTo(r.c.count()) }

func (r *recorder) flushUpTo(n int) {
	msgs := r.c.all()
	for _, m := range msgs[r.seen:n] {
		r.write("← "+m.Method, m.Params)
	}
	r.seen = n
}

var (
	durationRE = regexp.MustCompile(`"durationMs": [0-9.e+-]+`)
	runIDRE    = regexp.MustCompile(`"runId": "[^"]+"`)
	journalRE  = regexp.MustCompile(`"journalPath": "[^"]+"`)
)

func (r *recorder) write(head string, v any) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			r.t.Fatal(err)
		}
		raw = b
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, raw, "", "  "); err != nil {
		pretty.Write(raw)
	}
	text := pretty.String()
	text = strings.ReplaceAll(text, filepath.ToSlash(r.work), "$WORK")
	text = durationRE.ReplaceAllString(text, `"durationMs": 0`)
	text = runIDRE.ReplaceAllString(text, `"runId": "$$RUN"`)
	text = journalRE.ReplaceAllString(text, `"journalPath": "$$JOURNAL"`)
	fmt.Fprintf(&r.out, "%s\n%s\n\n", head, text)
}
