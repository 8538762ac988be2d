package secrets

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// containsValueRef and displayViewRef are ContainsValue and displayView as
// they were before their fast paths (shownAsIs, the printable-ASCII runs):
// the fast paths must change nothing but speed.
func containsValueRef(text, secret string) bool {
	if secret == "" {
		return false
	}
	if strings.Contains(text, secret) {
		return true
	}
	views := []string{text}
	if strings.IndexByte(text, '\\') >= 0 {
		views = append(views, jsonUnescape(text))
	}
	for _, v := range views {
		if v != text && strings.Contains(v, secret) {
			return true
		}
		if strings.Contains(displayViewRef(v, ""), secret) || strings.Contains(displayViewRef(v, " "), secret) {
			return true
		}
	}
	return false
}

func displayViewRef(text, sep string) string {
	var b strings.Builder
	b.Grow(len(text))
	inRun := false
	for i := 0; i < len(text); {
		if n := ansiSequence(text[i:]); n > 0 {
			if !inRun {
				b.WriteString(sep)
				inRun = true
			}
			i += n
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			if !inRun {
				b.WriteString(sep)
				inRun = true
			}
			i += n
			continue
		}
		inRun = false
		b.WriteString(text[i : i+n])
		i += n
	}
	return b.String()
}

// FuzzContainsValueMatchesReference holds ContainsValue and displayView to
// the reference above on any text and secret.
func FuzzContainsValueMatchesReference(f *testing.F) {
	secret := "gh" + "p_" + rep("K7", 18)
	for _, seed := range [][2]string{
		{"echo " + secret, secret},
		{"plain text only", "text"},
		{`{"a":"\u0067hp_` + rep("K7", 18) + `"}`, secret},
		{secret[:10] + "\x1b[31m" + secret[10:], secret},
		{secret[:10] + "\u200b" + secret[10:], secret},
		{"pass\x1b[0m\x07word", "pass word"},
		{"a\nb\tc\x7fd\u0085e", "a b"},
		{"caf\xc3\xa9 \xff\xfe x", "\xff"},
		{"\x1b]0;title\x07sk", "sk"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, text, secret string) {
		if got, want := ContainsValue(text, secret), containsValueRef(text, secret); got != want {
			t.Fatalf("ContainsValue(%q, %q) = %v, reference %v", text, secret, got, want)
		}
		for _, sep := range []string{"", " "} {
			if got, want := displayView(text, sep), displayViewRef(text, sep); got != want {
				t.Fatalf("displayView(%q, %q) = %q, reference %q", text, sep, got, want)
			}
		}
		if shownAsIs(text) && displayViewRef(text, "|") != text {
			t.Fatalf("shownAsIs(%q) but its display view is %q", text, displayViewRef(text, "|"))
		}
	})
}

// BenchmarkContainsValue checks a 4 KiB model exchange (prose with line
// breaks, as instructions and replies are) for a credential it does not
// hold, and the same text on one line.
func BenchmarkContainsValue(b *testing.B) {
	secret := "sk" + "-" + rep("Q9", 20)
	para := "You answer briefly. Reply with exactly `Answer:` followed by the input, then a short reason.\\n"
	for _, tt := range []struct{ name, text string }{
		{"lines", strings.Repeat(strings.ReplaceAll(para, `\n`, "\n"), 4096/len(para))},
		{"one-line", strings.Repeat(strings.ReplaceAll(para, `\n`, " "), 4096/len(para))},
		{"json-escaped", `{"content":"` + strings.Repeat(para, 4096/len(para)) + `"}`},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.text)))
			b.ReportAllocs()
			for b.Loop() {
				if ContainsValue(tt.text, secret) {
					b.Fatal("found a credential that is not there")
				}
			}
		})
	}
}
