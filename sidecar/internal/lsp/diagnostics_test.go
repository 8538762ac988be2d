package lsp_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

func TestDiagnosticsOnOpenAndChange(t *testing.T) {
	// A GitHub-shaped token, assembled at run time so no literal token is
	// ever committed.
	token := "gh" + "p_" + strings.Repeat("a1B2", 9)
	withToken := strings.Replace(greeter, "You greet people.", "You greet people. Use "+token+" to log in.", 1)

	tests := []struct {
		name string
		text string
		// wantSeverity is the severity every diagnostic must have; 0 means
		// no diagnostic at all.
		wantSeverity int
		wantIn       string
	}{
		{"valid", greeter, 0, ""},
		{"unfinished tail is information, not an error", unfinished, int(agentfile.SeverityInformation), "still being written"},
		{"credential shape is an error naming the shape", withToken, int(agentfile.SeverityError), "GitHub token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startServer(t, lsp.Options{})
			c.initialize(nil)
			uri := "file:///work/a.agent.md"
			c.open(uri, 1, greeter)
			d, _ := c.diagnosticsFor(0, uri, 1)
			if len(d.Diagnostics) != 0 {
				t.Fatalf("valid file has diagnostics: %+v", d.Diagnostics)
			}
			from := c.count()
			c.notify("textDocument/didChange", map[string]any{
				"textDocument":   map[string]any{"uri": uri, "version": 2},
				"contentChanges": []map[string]any{{"text": tt.text}},
			})
			d, i := c.diagnosticsFor(from, uri, 2)
			if tt.wantSeverity == 0 {
				if len(d.Diagnostics) != 0 {
					t.Fatalf("diagnostics %+v, want none", d.Diagnostics)
				}
				return
			}
			if len(d.Diagnostics) == 0 {
				t.Fatal("no diagnostics")
			}
			found := false
			for _, dg := range d.Diagnostics {
				if dg.Severity != tt.wantSeverity {
					t.Errorf("diagnostic %q has severity %d, want %d", dg.Message, dg.Severity, tt.wantSeverity)
				}
				if dg.Source != "kmx" {
					t.Errorf("source %q, want kmx", dg.Source)
				}
				found = found || strings.Contains(dg.Message, tt.wantIn)
			}
			if !found {
				t.Errorf("no diagnostic mentions %q: %+v", tt.wantIn, d.Diagnostics)
			}
			// The credential value must not appear anywhere in what was
			// published, escaped or not.
			raw := string(c.all()[i].Params)
			if strings.Contains(raw, token) || strings.Contains(raw, token[4:20]) {
				t.Fatal("publishDiagnostics echoes the credential value")
			}
		})
	}
}

func TestIncrementalChangesUseUTF16Ranges(t *testing.T) {
	c := startServer(t, lsp.Options{})
	c.initialize(nil)
	uri := "file:///work/u.agent.md"
	// "é" is 2 bytes and 1 UTF-16 unit; "🚀" is 4 bytes and 2 units.
	text := strings.Replace(greeter, "You greet people.", "You greet é🚀 people.", 1)
	c.open(uri, 1, text)
	c.diagnosticsFor(0, uri, 1)

	// Line 4 is "You greet é🚀 people.". Replace "people" (UTF-16
	// characters 14..20) with "folks", then insert a credential-free word
	// at the start of line 5 and delete it again, in one notification.
	from := c.count()
	c.notify("textDocument/didChange", map[string]any{
		"textDocument": map[string]any{"uri": uri, "version": 2},
		"contentChanges": []map[string]any{
			{"range": rng(4, 14, 4, 20), "text": "folks"},
			{"range": rng(5, 0, 5, 0), "text": "XYZ "},
			{"range": rng(5, 0, 5, 4), "text": ""},
		},
	})
	d, _ := c.diagnosticsFor(from, uri, 2)
	if len(d.Diagnostics) != 0 {
		t.Fatalf("after a clean edit: %+v", d.Diagnostics)
	}
	var ex lsp.ExamplesResult
	c.mustCall(lsp.MethodExamples, lsp.DocumentParams{URI: uri}, &ex)
	if ex.State != "valid" || len(ex.Examples) != 3 {
		t.Fatalf("examples = %+v", ex)
	}
	// The edit really landed: the range of the Examples heading did not
	// move, and the revision is the SHA-256 of the expected text.
	want := strings.Replace(text, "people.", "folks.", 1)
	if got := agentfile.Parse("u.agent.md", []byte(want)).Agent.Revision; got != ex.Revision {
		t.Fatalf("revision %s, want %s: the incremental edit was applied in the wrong place", ex.Revision, got)
	}
}

func rng(sl, sc, el, ec int) map[string]any {
	return map[string]any{
		"start": map[string]any{"line": sl, "character": sc},
		"end":   map[string]any{"line": el, "character": ec},
	}
}

// TestStaleDiagnosticsAreNeverPublished races a slow parse of version 1
// against a fast parse of version 2: version 1's diagnostics must never
// be published once version 2 exists.
func TestStaleDiagnosticsAreNeverPublished(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	slowStarted, slowDone := make(chan struct{}), make(chan struct{})
	parse := func(name string, src []byte) agentfile.Result {
		if strings.Contains(string(src), "SLOW") {
			once.Do(func() { close(slowStarted) })
			<-release
			defer close(slowDone)
		}
		return agentfile.Parse(name, src)
	}
	c := startServer(t, lsp.Options{Parse: parse})
	c.initialize(nil)
	uri := "file:///work/race.agent.md"
	c.open(uri, 1, unfinished+"SLOW\n")
	<-slowStarted
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": 2},
		"contentChanges": []map[string]any{{"text": greeter}},
	})
	_, i := c.diagnosticsFor(0, uri, 2)
	close(release)
	<-slowDone
	// Give the slow parse every chance to publish, then check it did not:
	// a third version goes through the same publish lock after it.
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": 3},
		"contentChanges": []map[string]any{{"text": greeter}},
	})
	c.diagnosticsFor(i+1, uri, 3)
	for _, m := range c.all() {
		if m.Method != "textDocument/publishDiagnostics" {
			continue
		}
		var p publishedDiagnostics
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatal(err)
		}
		if p.Version != nil && *p.Version == 1 {
			t.Fatalf("diagnostics for version 1 were published after version 2 existed: %s", m.Params)
		}
	}
}
