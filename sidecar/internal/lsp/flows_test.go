package lsp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

var update = flag.Bool("update", false, "rewrite the transcript section of testdata/*.txtar")

// TestFlows drives the server through the editor flows in testdata, one
// txtar archive per scenario, so a new case needs no Go code. An archive
// holds:
//
//   - its comment: what the flow shows;
//   - the workspace: every file but the sections below, written to a fresh
//     folder ($WORK) before the server starts;
//   - buffer/NAME sections: unsaved editor text, never written to disk;
//   - script: the client's steps, one a line (# comments, blank lines);
//   - transcript: every message the client sent and received, in order,
//     with volatile values (temporary paths, run IDs, durations)
//     normalized. go test -run TestFlows -update rewrites it.
//
// Script steps ($WORK in JSON is the workspace path, $PROTOCOL the contract
// version):
//
//	handshake                          initialize (one example at a time), not recorded
//	call METHOD [JSON]                 a request and its reply
//	notify METHOD [JSON]               a notification
//	open FILE [language=ID] [text=SECTION]
//	                                   didOpen, version 1, the file's text (or SECTION's)
//	change FILE VERSION SECTION        didChange to SECTION's whole text
//	diagnostics FILE [VERSION] [FILE VERSION]...
//	                                   wait for FILE's diagnostics (of VERSION); with
//	                                   several files (a pair, published concurrently)
//	                                   record them in the order named, after anything
//	                                   else received meanwhile
func TestFlows(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no flows in testdata (%v)", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			runFlow(t, path)
		})
	}
}

func runFlow(t *testing.T, path string) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	r := &recorder{t: t, work: work, files: map[string]string{}}
	var script, want []byte
	for _, f := range ar.Files {
		switch {
		case f.Name == "script":
			script = f.Data
			continue
		case f.Name == "transcript":
			want = f.Data
			continue
		}
		r.files[f.Name] = string(f.Data)
		if strings.HasPrefix(f.Name, "buffer/") {
			continue
		}
		dst := filepath.Join(work, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if script == nil {
		t.Fatalf("%s has no script section; add one (see TestFlows)", path)
	}
	r.c = startServer(t, lsp.Options{Version: "test"})
	sc := bufio.NewScanner(bytes.NewReader(script))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := r.step(line); err != nil {
			t.Fatalf("%s: script line %d: %v", path, n, err)
		}
	}
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
}

// step runs one script line.
func (r *recorder) step(line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "handshake":
		r.handshake()
	case "call", "notify":
		method, params, _ := strings.Cut(rest, " ")
		if method == "" {
			return fmt.Errorf("%s needs a method", verb)
		}
		var p any
		if params = strings.TrimSpace(params); params != "" {
			params = strings.NewReplacer("$WORK", filepath.ToSlash(r.work), "$PROTOCOL", lsp.ProtocolVersion).Replace(params)
			if !json.Valid([]byte(params)) {
				return fmt.Errorf("the params of %s are not JSON: %s", method, params)
			}
			p = json.RawMessage(params)
		}
		if verb == "call" {
			r.call(method, p)
		} else {
			r.notify(method, p)
		}
	case "open":
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return fmt.Errorf("open needs a file")
		}
		name, lang, text := fields[0], "markdown", fields[0]
		for _, kv := range fields[1:] {
			switch k, v, _ := strings.Cut(kv, "="); k {
			case "language":
				lang = v
			case "text":
				text = v
			default:
				return fmt.Errorf("open: unknown option %q (language=ID, text=SECTION)", kv)
			}
		}
		body, err := r.section(text)
		if err != nil {
			return err
		}
		r.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": r.uri(name), "languageId": lang, "version": 1, "text": body}})
	case "change":
		fields := strings.Fields(rest)
		if len(fields) != 3 {
			return fmt.Errorf("change takes FILE VERSION SECTION")
		}
		version, err := strconv.Atoi(fields[1])
		if err != nil {
			return fmt.Errorf("change: version %q is not a number", fields[1])
		}
		body, err := r.section(fields[2])
		if err != nil {
			return err
		}
		r.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": r.uri(fields[0]), "version": version},
			"contentChanges": []any{map[string]any{"text": body}},
		})
	case "diagnostics":
		fields := strings.Fields(rest)
		switch {
		case len(fields) == 1:
			r.awaitAnyDiagnostics(r.uri(fields[0]))
		case len(fields) >= 2 && len(fields)%2 == 0:
			var want []awaited
			for i := 0; i < len(fields); i += 2 {
				version, err := strconv.Atoi(fields[i+1])
				if err != nil {
					return fmt.Errorf("diagnostics: version %q is not a number", fields[i+1])
				}
				want = append(want, awaited{uri: r.uri(fields[i]), version: int32(version)})
			}
			r.awaitDiagnostics(want...)
		default:
			return fmt.Errorf("diagnostics takes FILE [VERSION], or FILE VERSION pairs")
		}
	default:
		return fmt.Errorf("unknown step %q (handshake, call, notify, open, change, diagnostics)", verb)
	}
	return nil
}

// section is the text of an archive section.
func (r *recorder) section(name string) (string, error) {
	text, ok := r.files[name]
	if !ok {
		return "", fmt.Errorf("the archive has no section %q", name)
	}
	return text, nil
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

// awaited is one publishDiagnostics a step waits for.
type awaited struct {
	uri     string
	version int32
}

// awaitDiagnostics waits for the diagnostics of each version and records
// every message received up to the last of them: the awaited ones in the
// order given (a pair's files are diagnosed concurrently), after the rest
// in arrival order.
func (r *recorder) awaitDiagnostics(want ...awaited) {
	r.t.Helper()
	at := map[int]int{} // message index → position in want
	last := r.seen
	for k, w := range want {
		from := r.seen
		for {
			_, i := r.c.diagnosticsFor(from, w.uri, w.version)
			if _, taken := at[i]; !taken {
				at[i] = k
				last = max(last, i+1)
				break
			}
			from = i + 1
		}
	}
	msgs := r.c.all()
	inOrder := make([]message, len(want))
	for i := r.seen; i < last; i++ {
		if k, ok := at[i]; ok {
			inOrder[k] = msgs[i]
			continue
		}
		r.write("← "+msgs[i].Method, msgs[i].Params)
	}
	for _, m := range inOrder {
		r.write("← "+m.Method, m.Params)
	}
	r.seen = last
}

// awaitAnyDiagnostics waits for the next diagnostics of uri, whatever
// their version (kmx.yaml's have none).
func (r *recorder) awaitAnyDiagnostics(uri string) {
	r.t.Helper()
	_, i := r.c.waitMessage(r.seen, "textDocument/publishDiagnostics", func(raw json.RawMessage) bool {
		var p publishedDiagnostics
		return json.Unmarshal(raw, &p) == nil && p.URI == uri
	})
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
