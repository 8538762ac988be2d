// Command floor is the per-example floor kmx's compatible-route pipeline is
// measured against (BenchmarkCompatibleVsFloor, make bench-compare): for each
// of n examples, one POST of a chat request to an OpenAI-compatible endpoint,
// a parse of the reply, three text assertions, and five rows (the number of
// records a kmx turn journals) written in one SQLite WAL transaction with
// synchronous=NORMAL, through the same modernc driver kmx uses. No sessions,
// no hash chain, no replay: the least work that still sends, checks and
// stores every example.
//
// With -serve it is instead the endpoint both are measured against: an
// OpenAI-compatible server on a loopback address that answers every chat
// request with "Answer: " and the user message, after -delay. It prints its
// base URL on the first line of stdout.
//
// It lives under testdata so it is never part of the kmx build.
// It is deliberately standalone (no kmx package imported, so nothing of
// kmx's is in the floor): its loopback endpoint's request parsing repeats
// the test endpoint's in concurrency_test.go on purpose.
//
//	go run ./sidecar/internal/runner/testdata/floor -serve 127.0.0.1:0 [-delay 200ms]
//	go run ./sidecar/internal/runner/testdata/floor -endpoint http://127.0.0.1:PORT/v1 -n 2000 -db /tmp/floor.db
package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	_ "modernc.org/sqlite"
)

func main() {
	endpoint := flag.String("endpoint", "", "OpenAI-compatible base URL")
	n := flag.Int("n", 2000, "examples")
	dbPath := flag.String("db", "", "SQLite file to create")
	serveAddr := flag.String("serve", "", "serve the endpoint on this loopback address instead")
	delay := flag.Duration("delay", 0, "with -serve: wait this long before each answer")
	flag.Parse()
	if *serveAddr != "" {
		if err := serve(*serveAddr, *delay); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*endpoint, *n, *dbPath); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(endpoint string, n int, dbPath string) error {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS records (seq INTEGER PRIMARY KEY, example TEXT NOT NULL, kind TEXT NOT NULL, payload BLOB NOT NULL)`); err != nil {
		return err
	}
	ins, err := db.Prepare(`INSERT INTO records (example, kind, payload) VALUES (?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	client := &http.Client{}
	pass := 0
	for i := range n {
		id := fmt.Sprintf("ex-%05d", i)
		input := fmt.Sprintf("Question number %d about the release", i)
		body, _ := json.Marshal(map[string]any{
			"model": "kmx-bench-model",
			"messages": []map[string]string{
				{"role": "system", "content": "You answer briefly."},
				{"role": "user", "content": input},
			},
		})
		resp, err := client.Post(endpoint+"/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return err
		}
		var reply struct {
			Model   string `json:"model"`
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(raw, &reply); err != nil || len(reply.Choices) != 1 {
			return fmt.Errorf("example %s: bad reply", id)
		}
		answer := reply.Choices[0].Message.Content
		re, err := regexp.Compile(fmt.Sprintf(`number %d\b`, i))
		if err != nil {
			return err
		}
		if strings.Contains(answer, "Answer:") && re.MatchString(answer) && !strings.Contains(answer, "TODO") {
			pass++
		}
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		st := tx.Stmt(ins)
		for _, r := range [][2]string{{"session.placed", id}, {"turn.started", input}, {"model.request", string(body)}, {"model.completion", string(raw)}, {"turn.terminal", answer}} {
			if _, err := st.Exec(id, r[0], []byte(r[1])); err != nil {
				_ = tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	fmt.Printf("%d of %d passed\n", pass, n)
	return nil
}

// serve answers chat requests like an instant (or -delay slow) model.
func serve(addr string, delay time.Duration) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s/v1\n", lis.Addr())
	return http.Serve(lis, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		user := ""
		for _, m := range req.Messages {
			if m.Role == "user" {
				user = m.Content
			}
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-floor", "object": "chat.completion", "created": 0, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "message": map[string]string{"role": "assistant", "content": "Answer: " + user}, "finish_reason": "stop"}},
			"usage":   map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
		})
	}))
}
