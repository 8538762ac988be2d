package judge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseReplyAccepts(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantScore *int
		wantWhy   string
	}{
		{"integer", `{"score": 85, "reasoning": "clear"}`, intp(85), "clear"},
		{"keys in either order", `{"reasoning": "r", "score": 0}`, intp(0), "r"},
		{"upper bound", `{"score":100,"reasoning":""}`, intp(100), ""},
		{"null is inconclusive", `{"score": null, "reasoning": "n/a"}`, nil, "n/a"},
		{"surrounding JSON whitespace", " \n\t{\"score\":1,\"reasoning\":\"x\"}\r\n ", intp(1), "x"},
		{"escapes decoded", `{"score":5,"reasoning":"a\nb \u00e9"}`, intp(5), "a\nb é"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReply(tc.in)
			if err != nil {
				t.Fatalf("ParseReply: %v", err)
			}
			if (got.Score == nil) != (tc.wantScore == nil) || (got.Score != nil && *got.Score != *tc.wantScore) {
				t.Fatalf("Score = %v, want %v", got.Score, tc.wantScore)
			}
			if got.Reasoning != tc.wantWhy {
				t.Fatalf("Reasoning = %q, want %q", got.Reasoning, tc.wantWhy)
			}
		})
	}
}

func TestParseReplyRefusesMalformed(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"whitespace", "  \n"},
		{"plain text", "Score: 90"},
		{"code fence", "```json\n{\"score\":90,\"reasoning\":\"x\"}\n```"},
		{"prose before", `Here you go: {"score":90,"reasoning":"x"}`},
		{"trailing text", `{"score":90,"reasoning":"x"} thanks`},
		{"second object", `{"score":90,"reasoning":"x"}{"score":1,"reasoning":"y"}`},
		{"array", `[{"score":90,"reasoning":"x"}]`},
		{"bare number", `90`},
		{"null document", `null`},
		{"empty object", `{}`},
		{"missing score", `{"reasoning":"x"}`},
		{"missing reasoning", `{"score":90}`},
		{"duplicate score", `{"score":90,"score":10,"reasoning":"x"}`},
		{"duplicate reasoning", `{"score":90,"reasoning":"x","reasoning":"y"}`},
		{"duplicate via escape", `{"score":90,"reasoning":"x","sc\u006fre":10}`},
		{"unknown key", `{"score":90,"reasoning":"x","confidence":1}`},
		{"case alias key", `{"Score":90,"reasoning":"x"}`},
		{"fraction", `{"score":90.5,"reasoning":"x"}`},
		{"integral fraction", `{"score":90.0,"reasoning":"x"}`},
		{"exponent", `{"score":1e2,"reasoning":"x"}`},
		{"negative", `{"score":-1,"reasoning":"x"}`},
		{"negative zero", `{"score":-0,"reasoning":"x"}`},
		{"above 100", `{"score":101,"reasoning":"x"}`},
		{"huge", `{"score":99999999999999999999999,"reasoning":"x"}`},
		{"leading zero", `{"score":090,"reasoning":"x"}`},
		{"score as string", `{"score":"90","reasoning":"x"}`},
		{"score as bool", `{"score":true,"reasoning":"x"}`},
		{"score as object", `{"score":{"value":90},"reasoning":"x"}`},
		{"score as array", `{"score":[90],"reasoning":"x"}`},
		{"reasoning null", `{"score":90,"reasoning":null}`},
		{"reasoning number", `{"score":90,"reasoning":1}`},
		{"reasoning object", `{"score":90,"reasoning":{}}`},
		{"trailing comma", `{"score":90,"reasoning":"x",}`},
		{"single quotes", `{'score':90,'reasoning':'x'}`},
		{"unquoted keys", `{score:90,reasoning:"x"}`},
		{"truncated", `{"score":90,"reasoning":"x`},
		{"unclosed object", `{"score":90,"reasoning":"x"`},
		{"NaN", `{"score":NaN,"reasoning":"x"}`},
		{"invalid UTF-8", "{\"score\":90,\"reasoning\":\"\xff\"}"},
		{"too long", `{"score":90,"reasoning":"` + strings.Repeat("a", MaxReplyBytes) + `"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReply(tc.in)
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("ParseReply = %+v, %v; want *MalformedError", got, err)
			}
			// The error names the class of problem, never the reply's text.
			if len(tc.in) > 8 && strings.Contains(err.Error(), tc.in) {
				t.Fatalf("error %q quotes the reply", err)
			}
		})
	}
}

// FuzzParseReply checks that ParseReply never panics, that whatever it
// accepts has exactly the two keys once each at the top level, and that an
// accepted score is in range.
func FuzzParseReply(f *testing.F) {
	for _, s := range []string{
		`{"score": 85, "reasoning": "clear"}`,
		`{"score": null, "reasoning": ""}`,
		`{"score":90,"score":10,"reasoning":"x"}`,
		`{"score":90,"reasoning":"x","sc\u006fre":10}`,
		`{"reasoning":"a","reasoning":"b","score":1}`,
		`{"score":1e2,"reasoning":"x"}`,
		`{"score":100,"reasoning":"x"} `,
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := ParseReply(in)
		if err != nil {
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("error %v is not a *MalformedError", err)
			}
			return
		}
		if r.Score != nil && (*r.Score < 0 || *r.Score > 100) {
			t.Fatalf("accepted score %d out of range", *r.Score)
		}
		keys, ok := topLevelKeys(in)
		if !ok {
			t.Fatalf("accepted %q, which is not one JSON object", in)
		}
		if len(keys) != 2 || keys["score"] != 1 || keys["reasoning"] != 1 {
			t.Fatalf("accepted %q with top-level keys %v", in, keys)
		}
	})
}

// topLevelKeys counts the (unescaped) top-level keys of one JSON object,
// independently of ParseReply's own loop.
func topLevelKeys(s string) (map[string]int, bool) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil || raw == nil {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	keys := map[string]int{}
	depth := 0
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			// Entering the top object, or leaving a nested value inside it,
			// is followed by a key (or the end).
			expectKey = depth == 1
			continue
		case string:
			if depth == 1 && expectKey {
				keys[v]++
				expectKey = false
				continue
			}
		}
		if depth == 1 {
			expectKey = true
		}
	}
	return keys, true
}
