//go:build kmxtest

package lsp_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/ghread/ghreadtest"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// pendingAgent is an agent file whose one example has a pending recording
// (`calls: []`) of the GitHub tool.
const pendingAgent = "---\nmodel: fake\ntools: [github_list_merged_prs]\n---\nList what was merged.\n\nCall the tool `github_list_merged_prs`\n\n## Examples\n\n```yaml\n" +
	"- id: weekly\n  input: What was merged?\n  tools:\n    github_list_merged_prs:\n      recorded:\n        calls: []\n  assert:\n    - contains: \"Add the tool harness\"\n```\n"

// boundOptions are server options as kmx lsp --tool-bindings gives them:
// the GitHub tool bound to repo, its credential in the environment, the
// state under home.
func boundOptions(home, repo string) lsp.Options {
	return lsp.Options{
		ToolBinding: &localtools.Binding{Path: "tools.json", Name: localtools.GitHubTool, Repository: repo, URL: localtools.GitHubMCPURL, CredentialEnv: "KMX_TEST_GH"},
		Getenv: func(k string) string {
			switch k {
			case "KMX_HOME":
				return home
			case "KMX_TEST_GH":
				return "fixture-credential-value-4242"
			}
			return ""
		},
	}
}

// TestCaptureIsAnEditInTheEditor: with kmx lsp --tool-bindings, a pending
// recording answered live comes back as a versioned WorkspaceEdit of its
// `[]` (for the extension to apply, undoable); the sidecar writes nothing.
func TestCaptureIsAnEditInTheEditor(t *testing.T) {
	const repo = "octo-org/Hello-World"
	ghreadtest.Use(t, ghreadtest.Options{Items: []ghreadtest.Item{{Number: 7, Title: "Add the tool harness", Repository: repo, Merged: true}}})
	home := privateHome(t)
	body := pendingAgent
	path := writeAgent(t, "merged.agent.md", body)
	c := startServer(t, boundOptions(home, repo))
	c.initialize(nil)
	uri := fileURI(path)
	c.open(uri, 3, body)

	var res struct {
		Report      *runner.Report `json:"report"`
		CaptureEdit struct {
			DocumentChanges []struct {
				TextDocument struct {
					URI     string `json:"uri"`
					Version *int32 `json:"version"`
				} `json:"textDocument"`
				Edits []struct {
					Range struct {
						Start struct{ Line, Character int } `json:"start"`
						End   struct{ Line, Character int } `json:"end"`
					} `json:"range"`
					NewText string `json:"newText"`
				} `json:"edits"`
			} `json:"documentChanges"`
		} `json:"captureEdit"`
	}
	var raw json.RawMessage
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri}, &raw)
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Report == nil || res.Report.Capture == nil || res.Report.Capture.Status != runner.CaptureEdit {
		t.Fatalf("result %s", raw)
	}
	dc := res.CaptureEdit.DocumentChanges
	if len(dc) != 1 || dc[0].TextDocument.URI != uri || dc[0].TextDocument.Version == nil || *dc[0].TextDocument.Version != 3 || len(dc[0].Edits) != 1 {
		t.Fatalf("capture edit %s", raw)
	}
	e := dc[0].Edits[0]
	lines := strings.Split(body, "\n")
	if e.Range.Start.Line != e.Range.End.Line || lines[e.Range.Start.Line][e.Range.Start.Character:e.Range.End.Character] != "[]" ||
		!strings.Contains(e.NewText, `"pullRequests":[{"number":7,"title":"Add the tool harness"}]`) {
		t.Errorf("edit %+v does not replace the pending []", e)
	}
	if now, _ := os.ReadFile(path); string(now) != body {
		t.Error("the sidecar wrote the file in the editor")
	}
}

// TestCaptureIsRefusedWhenTheDocumentChangedDuringTheRun: the document is
// edited while the run is inside its live read, so the capture computed
// against the text the run read would land on another text: the sidecar
// refuses it (no edit, the report says why and what to do, nothing passes)
// and writes nothing.
func TestCaptureIsRefusedWhenTheDocumentChangedDuringTheRun(t *testing.T) {
	const repo = "octo-org/Hello-World"
	home := privateHome(t)
	body := pendingAgent
	path := writeAgent(t, "merged.agent.md", body)
	uri := fileURI(path)
	var c *client
	edited := false
	ghreadtest.Use(t, ghreadtest.Options{
		Items: []ghreadtest.Item{{Number: 7, Title: "Add the tool harness", Repository: repo, Merged: true}},
		BeforeAnswer: func() {
			// The user types while the read is in flight; the code lens
			// request after it returns once the change has been applied.
			c.notify("textDocument/didChange", map[string]any{
				"textDocument":   map[string]any{"uri": uri, "version": 4},
				"contentChanges": []map[string]any{{"text": body + "\n"}},
			})
			c.lenses(uri)
			edited = true
		},
	})
	c = startServer(t, boundOptions(home, repo))
	c.initialize(nil)
	c.open(uri, 3, body)

	var res struct {
		Report      *runner.Report  `json:"report"`
		CaptureEdit json.RawMessage `json:"captureEdit"`
	}
	var raw json.RawMessage
	c.mustCall(lsp.MethodTest, lsp.TestParams{URI: uri}, &raw)
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if !edited {
		t.Fatalf("the run never reached its live read: %s", raw)
	}
	rc := res.Report
	if rc == nil || rc.Capture == nil || rc.Capture.Status != runner.CaptureRefused || len(rc.Capture.Edits) != 0 ||
		!strings.Contains(rc.Capture.Message, "changed since the run started") || rc.Capture.Next == "" {
		t.Fatalf("capture after an edit during the run: %s", raw)
	}
	if rc.Verdict == runner.VerdictPass {
		t.Errorf("a run whose capture was refused reports a pass")
	}
	if len(res.CaptureEdit) != 0 && string(res.CaptureEdit) != "null" {
		t.Errorf("a refused capture still sent an edit: %s", res.CaptureEdit)
	}
	if now, _ := os.ReadFile(path); string(now) != body {
		t.Error("the sidecar wrote the file in the editor")
	}
}

// TestBindingFileIsRefusedOnTheEditorRoute: with kmx lsp --tool-bindings, a
// tool-declaring file on the editor route is refused before any journal,
// even when VS Code offers a tool under the bound name: one source per
// tool, and the binding file's read is never mixed with VS Code's tools.
func TestBindingFileIsRefusedOnTheEditorRoute(t *testing.T) {
	const repo = "octo-org/Hello-World"
	home := privateHome(t)
	body := "---\nmodel: GPT-4.1\ntools: [github_list_merged_prs]\n---\nList what was merged.\n\n## Examples\n\n```yaml\n" +
		"- id: weekly\n  input: What was merged?\n  assert:\n    - toolCalled: github_list_merged_prs\n```\n"
	path := writeAgent(t, "merged.agent.md", body)
	e := &scriptedEditor{models: []route.EditorModelInfo{editorGPT}, tools: []route.EditorToolInfo{{Name: localtools.GitHubTool, Description: "VS Code's own"}}, reply: toolThenText}
	o := boundOptions(home, repo)
	o.Version = "test"
	c := startServer(t, o)
	c.mu.Lock()
	c.answer = e.answer
	c.mu.Unlock()
	c.initialize(map[string]any{"protocolVersion": lsp.ProtocolVersion, "settings": map[string]any{"concurrency": 1}, "languageModels": true})
	rep := testFile(t, c, path, body)
	if rep.Verdict != "refused" || rep.Refusal == nil || rep.RunID != "" {
		t.Fatalf("verdict %s refusal %+v run %q", rep.Verdict, rep.Refusal, rep.RunID)
	}
	if text := rep.Refusal.Message + " / " + rep.Refusal.Next; !strings.Contains(text, "the tool binding file binds github_list_merged_prs") || !strings.Contains(text, "--model fake") {
		t.Errorf("refusal %q does not say why and what to change", text)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.sends) != 0 || len(e.invokes) != 0 {
		t.Fatalf("a refused run sent %d requests and %d tool calls", len(e.sends), len(e.invokes))
	}
}
