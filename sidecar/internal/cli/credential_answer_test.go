package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnswerWithCredentialShapeIsNeverJournaledOrShown: a model answer that
// holds a GitHub-token shape is refused as credential (unknown): no byte of
// it reaches the output, the JSON report or any file in the state folder.
func TestAnswerWithCredentialShapeIsNeverJournaledOrShown(t *testing.T) {
	endpoint := transcriptEndpoint(t)
	file := writeAgent(t, "Answer.\n\n## Examples\n\n```yaml\n- id: a\n  input: token\n  assert:\n    - notContains: secret\n```\n")
	for _, args := range [][]string{
		{"test", file, "--json"},
		{"run", file, "--json"},
		{"run", file, "--input", "token"},
		{"chat", file, "--input", "token", "--json"},
	} {
		t.Run(args[0]+" "+strings.Join(args[2:], " "), func(t *testing.T) {
			h := home(t)
			r := kmx(t, h, append(args, "--endpoint", endpoint, "--model", "m")...)
			if r.code != ExitFailure {
				t.Fatalf("exit %d, want %d (unknown)\n%s%s", r.code, ExitFailure, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "T0k3n") {
				t.Errorf("the output shows the credential-shaped answer:\n%s%s", r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, "model call failed (credential)") {
				t.Errorf("the output does not name the credential class:\n%s%s", r.stdout, r.stderr)
			}
			err := filepath.WalkDir(h, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				if bytes.Contains(b, []byte("T0k3n")) {
					t.Errorf("%s holds the credential-shaped answer", p)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
