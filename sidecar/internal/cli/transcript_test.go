package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/txtar"
)

// TestTranscripts replays the command-line sessions in
// testdata/transcripts/*.ct and compares what kmx prints with what the file
// says, so help, refusals and summaries are reviewed as a user sees them.
// go test -tags kmxtest ./sidecar/internal/cli -run TestTranscripts -update rewrites the
// expected output from what kmx prints now (review the diff).
//
// A .ct file is a txtar archive. Its files are written to a fresh folder,
// the working directory of every command (so relative paths read as a user
// types them); its comment is the transcript:
//
//	# a comment (only between commands)
//	$ kmx ARGS...               one command line; NAME=VALUE words before kmx
//	                            set environment variables for that command
//	OUTPUT...                   stdout and stderr as they interleave
//	[exit N]                    the exit code, which ends the block
//
// Arguments are split on spaces, with '…' or "…" quoting. In arguments,
// $WORK is the folder, $DEMO the repository's testdata/demo, $KMX_HOME the
// state folder (one per transcript, kept between its commands), $ENDPOINT
// a scripted OpenAI-compatible endpoint on 127.0.0.1 (transcriptEndpoint says
// what it answers) and $RUN1, $RUN2, … the run IDs in the order they first
// appeared in the output.
//
// The output is normalised where it must vary between runs, and only
// there: those paths and run IDs by the names above, durations as D, journal
// sizes as SIZE, timestamps as T and the kmx version as V.
func TestTranscripts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.ct"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no transcripts in testdata/transcripts (%v)", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".ct"), func(t *testing.T) {
			runTranscript(t, path)
		})
	}
}

// transcriptBlock is one command of a transcript with what precedes it.
type transcriptBlock struct {
	comments []string // comment and blank lines before the command
	command  string   // the line after "$ "
	output   string   // the expected output
	exit     int
}

func parseTranscript(text string) ([]transcriptBlock, []string, error) {
	var blocks []transcriptBlock
	var pending []string
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if !strings.HasPrefix(line, "$ ") {
			if line != "" && !strings.HasPrefix(line, "#") {
				return nil, nil, fmt.Errorf("line %d: %q is neither a comment, a blank line nor a command ($ kmx ...)", i+1, line)
			}
			pending = append(pending, line)
			continue
		}
		b := transcriptBlock{comments: pending, command: strings.TrimPrefix(line, "$ ")}
		pending = nil
		var out []string
		closed := false
		for i++; i < len(lines); i++ {
			if m := exitLine.FindStringSubmatch(lines[i]); m != nil {
				b.exit, _ = strconv.Atoi(m[1])
				closed = true
				break
			}
			out = append(out, lines[i])
		}
		if !closed {
			return nil, nil, fmt.Errorf("command %q has no [exit N] line after its output", b.command)
		}
		if len(out) > 0 {
			b.output = strings.Join(out, "\n") + "\n"
		}
		blocks = append(blocks, b)
	}
	return blocks, pending, nil
}

var exitLine = regexp.MustCompile(`^\[exit (\d+)\]$`)

func formatTranscript(blocks []transcriptBlock, trailing []string) string {
	var b strings.Builder
	for _, bl := range blocks {
		for _, c := range bl.comments {
			b.WriteString(c + "\n")
		}
		b.WriteString("$ " + bl.command + "\n")
		b.WriteString(bl.output)
		fmt.Fprintf(&b, "[exit %d]\n", bl.exit)
	}
	for _, c := range trailing {
		b.WriteString(c + "\n")
	}
	return b.String()
}

func runTranscript(t *testing.T, path string) {
	path, err := filepath.Abs(path) // the commands run in the transcript's folder
	if err != nil {
		t.Fatal(err)
	}
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, trailing, err := parseTranscript(string(ar.Comment))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	work := t.TempDir()
	for _, f := range ar.Files {
		p := filepath.Join(work, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	demo, err := filepath.Abs(demoFile(""))
	if err != nil {
		t.Fatal(err)
	}
	ts := &transcriptState{
		vars: map[string]string{"$KMX_HOME": home(t), "$WORK": work, "$DEMO": demo, "$ENDPOINT": transcriptEndpoint(t)},
	}
	t.Chdir(work)
	changed := false
	for i := range blocks {
		b := &blocks[i]
		code, out, err := ts.run(b.command)
		if err != nil {
			t.Fatalf("%s: $ %s: %v", path, b.command, err)
		}
		if *updateGolden {
			b.output, b.exit = out, code
			continue
		}
		if out != b.output || code != b.exit {
			changed = true
			t.Errorf("$ %s\n--- got (exit %d) ---\n%s--- want (exit %d) ---\n%s", b.command, code, out, b.exit, b.output)
		}
	}
	if *updateGolden {
		ar.Comment = []byte(formatTranscript(blocks, trailing))
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if changed {
		t.Logf("if the new output is right, run go test -tags kmxtest ./sidecar/internal/cli -run 'TestTranscripts/%s' -update and review the diff", strings.TrimSuffix(filepath.Base(path), ".ct"))
	}
}

// transcriptState is what one transcript's commands share: the folders and
// the run IDs seen so far.
type transcriptState struct {
	vars map[string]string // $NAME -> value, for arguments and normalising
	runs []string          // run IDs in the order they first appeared
}

func (ts *transcriptState) run(line string) (int, string, error) {
	words, err := splitWords(line)
	if err != nil {
		return 0, "", err
	}
	env := map[string]string{"KMX_HOME": ts.vars["$KMX_HOME"]}
	for len(words) > 0 && strings.Contains(words[0], "=") && words[0] != "kmx" {
		k, v, _ := strings.Cut(words[0], "=")
		env[k] = ts.expand(v)
		words = words[1:]
	}
	if len(words) == 0 || words[0] != "kmx" {
		return 0, "", fmt.Errorf("a command starts with kmx (after NAME=VALUE words)")
	}
	args := make([]string, 0, len(words)-1)
	for _, w := range words[1:] {
		args = append(args, ts.expand(w))
	}
	var out lockedBuffer
	code := Main(context.Background(), args, Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out,
		Getenv: func(k string) string { return env[k] },
	})
	return code, ts.normalize(out.String()), nil
}

// expand replaces $WORK, $DEMO, $KMX_HOME and $RUNn in an argument.
func (ts *transcriptState) expand(w string) string {
	for i := len(ts.runs); i >= 1; i-- { // $RUN10 before $RUN1
		w = strings.ReplaceAll(w, "$RUN"+strconv.Itoa(i), ts.runs[i-1])
	}
	for k, v := range ts.vars {
		w = strings.ReplaceAll(w, k, v)
	}
	return w
}

var (
	transcriptRunID    = regexp.MustCompile(`\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{8}`)
	transcriptDuration = regexp.MustCompile(`\b\d+(\.\d+)? ?(ms|µs|s)\b`)
	transcriptSize     = regexp.MustCompile(`\b\d+(\.\d+)? (KiB|MiB|GiB|B|bytes)\b`)
	transcriptJSONNums = regexp.MustCompile(`"(durationMs|sizeBytes|bytes|size)": [0-9.e+-]+`)
	transcriptTimes    = regexp.MustCompile(`"(created|started|finished|updated|time)": "[^"]+"`)
	transcriptVersion  = regexp.MustCompile(`"kmxVersion": "[^"]+"`)
)

func (ts *transcriptState) normalize(s string) string {
	s = transcriptRunID.ReplaceAllStringFunc(s, func(id string) string {
		for i, r := range ts.runs {
			if r == id {
				return "$RUN" + strconv.Itoa(i+1)
			}
		}
		ts.runs = append(ts.runs, id)
		return "$RUN" + strconv.Itoa(len(ts.runs))
	})
	// The longest path first: $KMX_HOME and $WORK may share a prefix.
	keys := []string{"$KMX_HOME", "$WORK", "$DEMO", "$ENDPOINT"}
	for _, k := range keys {
		s = strings.ReplaceAll(s, ts.vars[k], k)
	}
	s = transcriptJSONNums.ReplaceAllString(s, `"$1": N`)
	s = transcriptTimes.ReplaceAllString(s, `"$1": "T"`)
	s = transcriptVersion.ReplaceAllString(s, `"kmxVersion": "V"`)
	s = transcriptSize.ReplaceAllString(s, "SIZE")
	return transcriptDuration.ReplaceAllString(s, "D")
}

// transcriptEndpoint starts the endpoint $ENDPOINT names (with /v1): a
// double at the world's edge, a remote model. It answers each chat request
// by the last user message:
//
//   - "redirect": HTTP 302 to another address;
//   - "status": HTTP 500;
//   - "token": an answer holding a GitHub-token shape (built here, so no
//     file holds one);
//   - anything else: "echo: " and the message.
//
// The reply names the model that was requested.
func transcriptEndpoint(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		last := ""
		for _, m := range req.Messages {
			if m.Role == "user" {
				last = m.Content
			}
		}
		var answer string
		switch last {
		case "redirect":
			http.Redirect(w, r, "http://127.0.0.1:9/elsewhere", http.StatusFound)
			return
		case "status":
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		case "token":
			answer = "here it is: " + "gh" + "p_" + strings.Repeat("T0k3n", 8)
		default:
			answer = "echo: " + last
		}
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{
				"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer},
			}},
		})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// splitWords splits a command line on spaces, with '…' and "…" quoting.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// lockedBuffer is stdout and stderr together, in the order they are
// written, as a terminal shows them; the runner writes from goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
