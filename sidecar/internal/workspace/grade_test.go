package workspace

import (
	"encoding/json"
	"strings"
	"testing"
)

// The outcome is judged alone: encoded and decoded as the journal keeps it,
// after the copy is gone, with the fixture out of reach.
func TestFileAssertionsAreJudgedFromTheOutcomeAlone(t *testing.T) {
	_, _, w := setup(t)
	wantOK(t, call(t, w, ReplaceString, `{"filePath": "calc/add.go", "oldString": "return a - b", "newString": "return a + b"}`))
	o, err := w.Outcome([]string{"calc/add.go", "README.md", "missing.go", "calc"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Remove(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var back Outcome
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind, path, operand string
		paths               []string
		want, msg           string
	}{
		{FileContains, "calc/add.go", "return a + b", nil, Pass, "contains"},
		{FileContains, "calc/add.go", "return a - b", nil, Fail, "does not contain"},
		{FileNotContains, "calc/add.go", "return a - b", nil, Pass, "does not contain"},
		{FileNotContains, "README.md", "calculator", nil, Fail, "contains the text"},
		{FileMatches, "calc/add.go", `return a \+ b\n}`, nil, Pass, "matches"},
		{FileMatches, "calc/add.go", `a \* b`, nil, Fail, "does not match"},
		{FileContains, "missing.go", "x", nil, Fail, "does not exist"},
		{FileContains, "calc", "x", nil, Fail, "not a regular file"},
		{FileContains, "docs/notes.txt", "x", nil, Unknown, "not recorded after the turn: the journal keeps the final content only of the files the example's content assertions named when it ran; test the example again"},
		{FileUnchanged, "README.md", "", nil, Pass, "unchanged"},
		{FileUnchanged, "calc/add.go", "", nil, Fail, "was modified"},
		{FilesChanged, "", "", []string{"calc/add.go"}, Pass, "exactly 1"},
		{FilesChanged, "", "", []string{}, Fail, "changed: [calc/add.go]; expected exactly: []"},
		{FilesChanged, "", "", []string{"calc/add.go", "README.md"}, Fail, "expected exactly: [README.md, calc/add.go]"},
	} {
		got, msg := Judge(tc.kind, tc.path, tc.operand, tc.paths, back)
		if got != tc.want || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s %s %q: %s %q, want %s with %q", tc.kind, tc.path, tc.operand, got, msg, tc.want, tc.msg)
		}
	}
}

func TestAContentAssertionOnAFileKeptByHashIsRefused(t *testing.T) {
	o := Outcome{Files: []FileState{{Path: "big.txt", Exists: true, Size: 70000, Hash: "sha256:ab", Omitted: true}}}
	got, msg := Judge(FileContains, "big.txt", "x", nil, o)
	if got != Unknown || !strings.Contains(msg, "recorded by hash only (sha256:ab)") || !strings.Contains(msg, "assert on a smaller file") {
		t.Fatalf("%s %q", got, msg)
	}
}

func TestCheckFilePath(t *testing.T) {
	for p, want := range map[string]string{"": "empty", ".": "empty", "/a": "absolute", "C:/a": "absolute", "../a": `".."`, `a\b`: `\`, "a//b": "clean", "a/": "clean"} {
		if err := CheckFilePath(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckFilePath(%q) = %v, want %q", p, err, want)
		}
	}
	if err := CheckFilePath("src/main.go"); err != nil {
		t.Fatal(err)
	}
}
