package lsp

import (
	"strings"
	"testing"
)

func TestApplyChanges(t *testing.T) {
	r := func(sl, sc, el, ec uint32) *lspRange {
		return &lspRange{Start: lspPosition{sl, sc}, End: lspPosition{el, ec}}
	}
	tests := []struct {
		name    string
		text    string
		changes []contentChange
		want    string
		wantErr string
	}{
		{"full replacement", "abc", []contentChange{{Text: "xyz"}}, "xyz", ""},
		{"insert at start", "abc", []contentChange{{Range: r(0, 0, 0, 0), Text: ">"}}, ">abc", ""},
		{"replace in second line", "ab\ncd\n", []contentChange{{Range: r(1, 0, 1, 1), Text: "X"}}, "ab\nXd\n", ""},
		{"CRLF counts as one terminator", "ab\r\ncd", []contentChange{{Range: r(1, 1, 1, 2), Text: "Z"}}, "ab\r\ncZ", ""},
		{"lone CR is a terminator", "ab\rcd", []contentChange{{Range: r(1, 0, 1, 0), Text: "^"}}, "ab\r^cd", ""},
		{"two-byte rune is one UTF-16 unit", "éa", []contentChange{{Range: r(0, 1, 0, 2), Text: "b"}}, "éb", ""},
		{"astral rune is two UTF-16 units", "🚀a", []contentChange{{Range: r(0, 2, 0, 3), Text: "b"}}, "🚀b", ""},
		{"inside a surrogate pair rounds to the rune's end", "🚀a", []contentChange{{Range: r(0, 1, 0, 1), Text: "|"}}, "🚀|a", ""},
		{"character past the line end means the end", "ab\ncd", []contentChange{{Range: r(0, 99, 0, 99), Text: "!"}}, "ab!\ncd", ""},
		{"delete across lines", "ab\ncd\nef", []contentChange{{Range: r(0, 1, 2, 1), Text: ""}}, "af", ""},
		{"changes apply in order", "abc", []contentChange{{Range: r(0, 0, 0, 1), Text: "xy"}, {Range: r(0, 1, 0, 2), Text: "Q"}}, "xQbc", ""},
		{"append at the very end", "ab\n", []contentChange{{Range: r(1, 0, 1, 0), Text: "c"}}, "ab\nc", ""},
		{"full then incremental", "old", []contentChange{{Text: "new\n"}, {Range: r(1, 0, 1, 0), Text: "x"}}, "new\nx", ""},
		{"line past the end is refused", "ab", []contentChange{{Range: r(3, 0, 3, 0), Text: "x"}}, "", "past the end"},
		{"reversed range is refused", "abcd", []contentChange{{Range: r(0, 3, 0, 1), Text: "x"}}, "", "ends before it starts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := applyChanges([]byte(tt.text), tt.changes)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	tests := []struct {
		raw  string
		want string
		ok   bool
	}{
		{`7`, "7", true},
		{`"abc"`, `"abc"`, true},
		{`1.5`, "", false},
		{`99999999999`, "", false},
		{`{}`, "", false},
	}
	for _, tt := range tests {
		id, ok := requestID([]byte(tt.raw))
		if ok != tt.ok {
			t.Errorf("%s: ok = %v", tt.raw, ok)
			continue
		}
		if ok {
			b, _ := id.MarshalJSON()
			if string(b) != tt.want {
				t.Errorf("%s: id %s, want %s", tt.raw, b, tt.want)
			}
		}
	}
}

func TestCheckSettings(t *testing.T) {
	key := "sk-" + strings.Repeat("a1", 12)
	tests := []struct {
		name   string
		st     Settings
		wantIn string
	}{
		{"empty is fine", Settings{}, ""},
		{"names are fine", Settings{Model: "llama3", Endpoint: "http://127.0.0.1:11434/v1", KeyEnv: "OPENAI_API_KEY", JudgeKeyEnv: "_J2"}, ""},
		{"a key value in keyEnv", Settings{KeyEnv: key}, "kmx.keyEnv holds a credential-shaped value"},
		{"a key in the endpoint", Settings{Endpoint: "https://x.example/v1?key=" + key}, "kmx.endpoint"},
		{"not a variable name", Settings{JudgeKeyEnv: "MY KEY"}, "kmx.judgeKeyEnv must be the name"},
		{"concurrency in range", Settings{Concurrency: 32}, ""},
		{"concurrency too high", Settings{Concurrency: 33}, "kmx.concurrency is 33; set it to a whole number from 1 to 32"},
		{"concurrency negative", Settings{Concurrency: -1}, "kmx.concurrency is -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkSettings(tt.st)
			if (tt.wantIn == "") != (got == "") || !strings.Contains(got, tt.wantIn) {
				t.Fatalf("checkSettings = %q, want %q", got, tt.wantIn)
			}
			if strings.Contains(got, key) {
				t.Fatal("the refusal echoes the credential value")
			}
		})
	}
}
