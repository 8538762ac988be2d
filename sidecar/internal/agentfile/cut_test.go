package agentfile

import (
	"reflect"
	"testing"
)

// TestBlockLinesMatchesByteScan holds the skipping blockLines to the
// byte-by-byte scan it replaced, on the cases each rule is for.
func TestBlockLinesMatchesByteScan(t *testing.T) {
	tests := []string{
		"",
		"- a\n- b\n",
		"- a: \"x\n- y\"\n- b\n",
		"- a: 'it''s\n- y'\n- b\n",
		"- a: it's\n- b: x[1]\n",
		"- a: [1,\n2]\n- b\n",
		"- a: {k: [\"]\", '}'],\n  z: 1}\n- b\n",
		"- a: \"esc \\\" still\n- in\"\n- b\n",
		"- a: \"esc at end \\\n- in\"\n- b\n",
		"- a: x # \"not a quote\n- b\n",
		"- a: x#\"quote\n- b\"\n- c\n",
		"# [comment\n- a\n",
		"- a:\r\n  - \"x\r\n- y\"\r\n- b\r\n",
		"-\t[a,\n- b]\n",
		"- a: ]]\n- b: }\n",
		"- a: x,[y\n- b\n",
		"- a: 'unterminated\n- b\n",
		"- a: \"unterminated\n- b\n",
		"- a: \"\\",
		"#",
		"\n\n",
		"- ? [a\n  ]\n  : b\n- c\n",
	}
	for _, tt := range tests {
		if got, want := blockLines(tt, 7), blockLinesRef(tt, 7); !reflect.DeepEqual(got, want) {
			t.Errorf("blockLines(%q) = %v, the byte scan says %v", tt, got, want)
		}
	}
}

func FuzzBlockLines(f *testing.F) {
	f.Add("- a: \"x\n- y\"\n- b: [1,\n2]\n# c\n- 'd''\n'\n")
	f.Add(string(benchFile(3)))
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := blockLines(text, 3), blockLinesRef(text, 3); !reflect.DeepEqual(got, want) {
			t.Fatalf("blockLines = %v, the byte scan says %v", got, want)
		}
	})
}
