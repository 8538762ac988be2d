package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/testutil/transcript"
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
// $WORK is the folder, $TESTDATA the repository's testdata (and $DEMO its
// demo folder), $KMX_HOME the
// state folder (one per transcript, kept between its commands), $ENDPOINT
// a scripted OpenAI-compatible endpoint on 127.0.0.1 (transcriptEndpoint says
// what it answers), $REFUSED an endpoint URL on 127.0.0.1 whose port
// refuses connections, and $RUN1, $RUN2, … the run IDs in the order they first
// appeared in the output.
//
// The output is normalised where it must vary between runs, and only
// there: those paths (the longest first) and run IDs by the names above, durations as D, journal
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

func runTranscript(t *testing.T, path string) {
	path, err := filepath.Abs(path) // the commands run in the transcript's folder
	if err != nil {
		t.Fatal(err)
	}
	demo, err := filepath.Abs(demoFile(""))
	if err != nil {
		t.Fatal(err)
	}
	how := fmt.Sprintf("go test -tags kmxtest ./sidecar/internal/cli -run 'TestTranscripts/%s' -update", strings.TrimSuffix(filepath.Base(path), ".ct"))
	transcript.Run(t, path, "$", *updateGolden, how, func(work string) transcript.Runner {
		ts := &transcriptState{n: &transcript.Normalizer{
			Vars: map[string]string{"$KMX_HOME": home(t), "$WORK": work, "$DEMO": demo, "$TESTDATA": filepath.Dir(demo), "$ENDPOINT": transcriptEndpoint(t), "$REFUSED": refusedEndpoint(t)},
		}}
		t.Chdir(work)
		return ts.run
	})
}

// transcriptState is what one transcript's commands share: the folders and
// the run IDs seen so far.
type transcriptState struct {
	n *transcript.Normalizer
}

func (ts *transcriptState) run(line string) (string, string, error) {
	words, err := splitWords(line)
	if err != nil {
		return "", "", err
	}
	env := map[string]string{"KMX_HOME": ts.n.Vars["$KMX_HOME"]}
	for len(words) > 0 && strings.Contains(words[0], "=") && words[0] != "kmx" {
		k, v, _ := strings.Cut(words[0], "=")
		env[k] = ts.n.Expand(v)
		words = words[1:]
	}
	if len(words) == 0 || words[0] != "kmx" {
		return "", "", fmt.Errorf("a command starts with kmx (after NAME=VALUE words)")
	}
	args := make([]string, 0, len(words)-1)
	for _, w := range words[1:] {
		args = append(args, ts.n.Expand(w))
	}
	var out lockedBuffer
	code := Main(context.Background(), args, Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out,
		Getenv: func(k string) string { return env[k] },
	})
	return ts.n.Normalize(out.String()), "exit " + strconv.Itoa(code), nil
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

// refusedEndpoint is an endpoint URL on a loopback port nothing listens on
// any more (it was listened on and closed), so a connection is refused.
func refusedEndpoint(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/v1"
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

// TestFolderJSONHasOverallVerdict: kmx test --json over several files says
// the invocation's verdict and example counts beside the per-file reports.
func TestFolderJSONHasOverallVerdict(t *testing.T) {
	r := kmx(t, home(t), "test", demoFile(""), "--json")
	var got struct {
		Verdict string
		Summary struct{ Pass, Fail, Unknown int }
		Files   []struct {
			Verdict  string
			Examples []struct{ Verdict string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	// The totals are the files' examples summed (the demo folder holds one
	// failing example, support-triage's billing-question).
	var want struct{ Pass, Fail, Unknown int }
	for _, f := range got.Files {
		for _, ex := range f.Examples {
			switch ex.Verdict {
			case "pass":
				want.Pass++
			case "fail":
				want.Fail++
			default:
				want.Unknown++
			}
		}
	}
	if r.code != ExitFailure || got.Verdict != "fail" || len(got.Files) < 2 || got.Summary != want || want.Fail != 1 || want.Pass == 0 {
		t.Errorf("exit %d, verdict %q, summary %+v over %d files; want exit 1, fail, the files' examples summed %+v", r.code, got.Verdict, got.Summary, len(got.Files), want)
	}
}
