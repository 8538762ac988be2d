package secrets

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// Credential-shaped values are assembled at run time so that no literal in
// this repository looks like a real token to a scanner.
func rep(s string, n int) string { return strings.Repeat(s, n) }

func TestScanFindsEveryShape(t *testing.T) {
	alnum36 := rep("a1B2", 9)
	pemHead := "-----BEGIN " + "RSA PRIVATE KEY-----"
	pemTail := "-----END " + "RSA PRIVATE KEY-----"
	tests := []struct {
		name  string
		token string
		shape string
	}{
		{"github classic", "gh" + "p_" + alnum36, ShapeGitHub},
		{"github oauth", "gh" + "o_" + alnum36, ShapeGitHub},
		{"github user", "gh" + "u_" + alnum36, ShapeGitHub},
		{"github server", "gh" + "s_" + alnum36, ShapeGitHub},
		{"github refresh", "gh" + "r_" + alnum36, ShapeGitHub},
		{"github fine-grained", "github" + "_pat_" + rep("A1", 11) + "_" + rep("b2", 30), ShapeGitHub},
		{"openai", "s" + "k-" + rep("Ab3", 16), ShapeSK},
		{"anthropic", "s" + "k-ant-api03-" + rep("x9_Y", 20), ShapeSK},
		{"openai project", "s" + "k-proj-" + rep("Qz7-", 12), ShapeSK},
		{"aws access key", "AK" + "IA" + rep("ABCD2345", 2), ShapeAWS},
		{"aws session key", "AS" + "IA" + rep("WXYZ6789", 2), ShapeAWS},
		{"slack bot", "xo" + "xb-" + "123456789012-" + rep("aB", 12), ShapeSlack},
		{"google", "AI" + "za" + rep("Sy0_", 8) + "abc", ShapeGoogle},
		{"pem block", pemHead + "\nMIIB" + rep("q", 40) + "\n" + pemTail, ShapePEM},
		{"pem header alone", "-----BEGIN " + "PRIVATE KEY-----", ShapePEM},
		{"jwt", "ey" + "JhbGciOiJIUzI1NiJ9." + "ey" + "JzdWIiOiIxMjM0In0." + rep("sIg_-", 6), ShapeJWT},
		{"bearer", "Bearer " + rep("tok3n", 6), ShapeBearer},
		{"bearer any case", "bEaReR\t" + rep("9xY.", 8), ShapeBearer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "before " + tt.token + " after"
			got := Scan(text)
			if len(got) != 1 {
				t.Fatalf("Scan found %d findings, want 1: %+v", len(got), got)
			}
			want := Finding{Shape: tt.shape, Start: len("before "), End: len("before ") + len(tt.token)}
			if got[0] != want {
				t.Errorf("Scan = %+v, want %+v", got[0], want)
			}
		})
	}
}

func TestScanIgnoresProse(t *testing.T) {
	tests := []string{
		"We use sk-learn for the classifier.",
		"sk-" + rep("abcdefghij", 3), // no digit: a hyphenated word, not a key
		"The Bearer of bad news arrived.",
		"Authorization: Bearer ${TOKEN}",
		"bearer " + rep("abcdefgh", 4), // no digit
		"ghp_short",
		"task-" + rep("a1", 20), // "sk-" inside a word
		"AKIA" + rep("A", 20),   // too long for an access key ID
		"AIza is a prefix",
		"xoxb-not-a-token",
		"eyJ.not.jwt",
		"-----BEGIN PUBLIC KEY-----",
		"See https://github.com/kmxdev/kmx for github_pat_ docs.",
		"",
	}
	for _, text := range tests {
		if got := Scan(text); len(got) != 0 {
			t.Errorf("Scan(%q) = %+v, want none", text, got)
		}
	}
}

func TestScanKeepsOneFindingPerCredential(t *testing.T) {
	jwt := "ey" + "JhbGciOiJIUzI1NiJ9." + "ey" + "JzdWIiOiIxMjM0In0." + rep("sIg_-", 6)
	text := "Authorization: Bearer " + jwt + "\nand " + "gh" + "p_" + rep("z", 36)
	got := Scan(text)
	if len(got) != 2 || got[0].Shape != ShapeBearer || got[1].Shape != ShapeGitHub {
		t.Fatalf("Scan = %+v, want a Bearer token then a GitHub token", got)
	}
	if got[0].End != strings.Index(text, "\n") {
		t.Errorf("Bearer finding ends at %d, want the end of the JWT at %d", got[0].End, strings.Index(text, "\n"))
	}
}

func TestContainsValue(t *testing.T) {
	secret := "gh" + "p_" + rep("K7", 18)
	half := len(secret) / 2
	tests := []struct {
		name   string
		text   string
		secret string
		want   bool
	}{
		{"exact", "echo " + secret, secret, true},
		{"absent", "nothing here", secret, false},
		{"empty secret", "anything", "", false},
		{"short placeholder", "the key is EMPTY", "EMPTY", true},
		{"json unicode escape", `{"a":"\u0067hp_` + rep("K7", 18) + `"}`, secret, true},
		{"json solidus escape", `{"u":"a\/b\/c"}`, "a/b/c", true},
		{"json surrogate pair", `"\ud83d\ude00x"`, "\U0001F600x", true},
		{"split by newline escape", `"` + secret[:half] + `\n` + secret[half:] + `"`, secret, true},
		{"split by control char", secret[:half] + "\x00" + secret[half:], secret, true},
		{"split by ANSI colour", secret[:half] + "\x1b[31m" + secret[half:], secret, true},
		{"split by zero-width space", secret[:half] + "\u200b" + secret[half:], secret, true},
		{"compacted to a space", "pass\x1b[0m\x07word", "pass word", true},
		{"partial copy", secret[:half], secret, false},
		{"invalid escape kept", `"\q` + secret + `"`, secret, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ContainsValue(tt.text, tt.secret); got != tt.want {
				t.Errorf("ContainsValue = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRepositoryHasNoCredentialShapes runs Scan over every tracked file so
// that a committed fixture or doc never carries a token-shaped literal.
func TestRepositoryHasNoCredentialShapes(t *testing.T) {
	root := testutil.ModuleRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 5 {
		t.Fatalf("git ls-files listed only %d files; expected the repository", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree but not yet committed
			}
			t.Fatalf("read %s: %v", f, err)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary
		}
		for _, fd := range Scan(string(data)) {
			line := 1 + strings.Count(string(data[:fd.Start]), "\n")
			t.Errorf("%s:%d: %s", f, line, fd.Shape)
		}
	}
}

func BenchmarkScan1MiB(b *testing.B) {
	line := "- id: example\n  input: Draft the release notes for this week, mention bearer of news and sk-learn.\n"
	text := strings.Repeat(line, (1<<20)/len(line))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if got := Scan(text); len(got) != 0 {
			b.Fatalf("unexpected findings %+v", got)
		}
	}
}

func TestJSONUnescapeOneLetterEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`a\"b`: "a\"b", `a\\b`: `a\b`, `a\/b`: "a/b", `a\bb`: "a\bb", `a\fb`: "a\fb",
		`a\nb`: "a\nb", `a\rb`: "a\rb", `a\tb`: "a\tb", `a\qb`: `a\qb`, `a\`: `a\`, `\u0041\n`: "A\n",
	} {
		if got := jsonUnescape(in); got != want {
			t.Errorf("jsonUnescape(%q) = %q, want %q", in, got, want)
		}
	}
}
