package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/conversation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

const chatAgent = "---\nname: Talker\nmodel: fake\n---\nYou are a test agent.\nReply with the turn number\n"

func kmxStdin(t *testing.T, h, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "KMX_HOME" {
			return h
		}
		return ""
	}}
	code := Main(context.Background(), args, env)
	return result{code, out.String(), errb.String()}
}

func wantExit(t *testing.T, r result, code int, contains ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, c := range contains {
		if !strings.Contains(r.stdout+r.stderr, c) {
			t.Fatalf("output lacks %q\nstdout: %s\nstderr: %s", c, r.stdout, r.stderr)
		}
	}
}

// TestChatTranscript: kmx chat sends one turn per --input (or per line of
// standard input) with the history, prints the history replayed with zero
// model calls, keeps conversations apart by ID, and clears.
func TestChatTranscript(t *testing.T) {
	h := home(t)
	file := writeAgent(t, chatAgent)

	r := kmx(t, h, "chat", file, "--history")
	wantExit(t, r, ExitOK, "conversation default", "no model yet", "0 turns, 0 model calls", "local preview")
	if _, err := os.Stat(journal.ConversationsDir(h)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("--history of a new conversation created files")
	}

	wantExit(t, kmx(t, h, "chat", file, "--input", "hello"), ExitOK, "── turn 1 ── answered", "you:   hello", "agent: Turn 1: hello", "model fake (route fake)", "local preview")
	wantExit(t, kmxStdin(t, h, "again\n\nthird\n", "chat", file), ExitOK, "agent: Turn 2: again", "agent: Turn 3: third")

	r = kmx(t, h, "chat", file, "--history")
	wantExit(t, r, ExitOK, "agent: Turn 1: hello", "agent: Turn 2: again", "agent: Turn 3: third", "3 turns, 0 model calls")

	r = kmx(t, h, "chat", file, "--history", "--json")
	wantExit(t, r, ExitOK)
	var res conversation.Transcript
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if res.Schema != conversation.Schema || res.Label != "local preview" || len(res.Turns) != 3 || res.ReplayLiveCalls != 0 ||
		res.Model == nil || res.Model.Route != "fake" || res.Turns[2].Answer != "Turn 3: third" || res.Turns[2].Name != "turn:3" {
		t.Fatalf("--json result = %+v", res)
	}

	wantExit(t, kmx(t, h, "chat", file, "--conversation", "other", "--input", "hi"), ExitOK, "conversation other", "agent: Turn 1: hi")
	wantExit(t, kmx(t, h, "chat", file, "--clear"), ExitOK, "cleared")
	wantExit(t, kmx(t, h, "chat", file, "--clear"), ExitOK, "nothing to clear")
	wantExit(t, kmx(t, h, "chat", file, "--input", "fresh"), ExitOK, "agent: Turn 1: fresh")
	wantExit(t, kmx(t, h, "chat", file, "--conversation", "other", "--history"), ExitOK, "agent: Turn 1: hi", "1 turn, 0 model calls")
}

// TestChatRefusals: every refusal exits 2 with what to change, and appends
// nothing.
func TestChatRefusals(t *testing.T) {
	h := home(t)
	file := writeAgent(t, chatAgent)
	wantExit(t, kmx(t, h, "chat", file, "--input", "one"), ExitOK)
	key := "ghp_" + strings.Repeat("Q7r6", 9)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no file", []string{"chat"}, "name one agent file"},
		{"missing file", []string{"chat", filepath.Join(t.TempDir(), "none.agent.md"), "--input", "x"}, "cannot read"},
		{"two modes", []string{"chat", file, "--input", "x", "--history"}, "pass one of"},
		{"judge flag", []string{"chat", file, "--input", "x", "--judge-endpoint", "http://127.0.0.1:9/v1"}, "not judged"},
		{"bad id", []string{"chat", file, "--conversation", "../x", "--input", "x"}, "conversation ID"},
		{"empty input", []string{"chat", file, "--input", " "}, "empty"},
		{"credential input", []string{"chat", file, "--input", "use " + key}, "credential-shaped"},
		{"nothing to discard", []string{"chat", file, "--discard-unfinished"}, "no unfinished turn"},
		{"another model", []string{"chat", file, "--input", "x", "--model", "m", "--endpoint", "http://127.0.0.1:9/v1"}, "a conversation never changes model"},
		{"nothing on stdin", []string{"chat", file}, "nothing to send"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := kmx(t, h, tc.args...)
			wantExit(t, r, ExitRefusal, tc.want, "next: ")
			if strings.Contains(r.stdout+r.stderr, key) {
				t.Fatal("the refusal echoed the credential")
			}
		})
	}
	wantExit(t, kmx(t, h, "chat", file, "--history"), ExitOK, "1 turn, 0 model calls")
}
