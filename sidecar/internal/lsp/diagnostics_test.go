package lsp_test

import (
	"encoding/json"
	"strconv"
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

// TestStaleDiagnosticsAreNeverPublished holds the parse of version 1
// while versions 2 to 5 arrive: version 1's result must be dropped, the
// intermediate versions never parsed (one parse per document at a time,
// restarted on the newest text), and only version 5 published.
func TestStaleDiagnosticsAreNeverPublished(t *testing.T) {
	release := make(chan struct{})
	slowStarted := make(chan struct{})
	var mu sync.Mutex
	var parsed []string
	parse := func(name string, src []byte) agentfile.Result {
		text := string(src)
		mu.Lock()
		parsed = append(parsed, text[strings.LastIndex(strings.TrimRight(text, "\n"), "\n")+1:])
		mu.Unlock()
		if strings.Contains(text, "SLOW") {
			close(slowStarted)
			<-release
		}
		return agentfile.Parse(name, src)
	}
	c := startServer(t, lsp.Options{Parse: parse})
	c.initialize(nil)
	uri := "file:///work/race.agent.md"
	c.open(uri, 1, unfinished+"SLOW\n")
	<-slowStarted
	for v := 2; v <= 5; v++ {
		c.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": v},
			"contentChanges": []map[string]any{{"text": greeter + "V" + strconv.Itoa(v) + "\n"}},
		})
	}
	// A request queued behind the changes: once it answers, all four
	// changes have been applied.
	var ex lsp.ExamplesResult
	c.mustCall(lsp.MethodExamples, lsp.DocumentParams{URI: uri}, &ex)
	if ex.DocumentVersion != 5 {
		t.Fatalf("examples answered for version %d, want 5", ex.DocumentVersion)
	}
	close(release)
	c.diagnosticsFor(0, uri, 5)
	for _, m := range c.all() {
		if m.Method != "textDocument/publishDiagnostics" {
			continue
		}
		var p publishedDiagnostics
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatal(err)
		}
		if p.Version == nil || *p.Version != 5 {
			t.Fatalf("diagnostics for an older version were published: %s", m.Params)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// The examples request parsed V5 itself (its own, uncached parse); the
	// diagnose loop parsed SLOW then V5, never V2..V4.
	for _, tail := range parsed {
		if tail == "V2" || tail == "V3" || tail == "V4" {
			t.Fatalf("an intermediate version was parsed: %v", parsed)
		}
	}
}
