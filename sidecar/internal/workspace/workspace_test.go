package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// writeTree creates files (path -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var sampleFixture = map[string]string{
	"README.md":        "# calc\nA tiny calculator.\n",
	"calc/add.go":      "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
	"calc/add_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"Add is wrong\")\n\t}\n}\n",
	"calc/mul.go":      "package calc\n\n// Mul multiplies using Add.\nfunc Mul(a, b int) int {\n\tr := 0\n\tfor i := 0; i < b; i++ {\n\t\tr = Add(r, a)\n\t}\n\treturn r\n}\n",
	"docs/notes.txt":   "Nothing to see.\n",
}

// setup writes the sample fixture beside an agent folder and returns the
// agent folder, the loaded fixture and its scratch copy.
func setup(t *testing.T) (string, *Fixture, *Workspace) {
	t.Helper()
	agentDir := t.TempDir()
	writeTree(t, filepath.Join(agentDir, "fixture"), sampleFixture)
	f, err := Load(agentDir, "fixture")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	w, err := f.Materialize(privateDir(t))
	if err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	t.Cleanup(func() { _ = w.Remove() })
	return agentDir, f, w
}

// privateDir is a private folder, as the state folder's workspace area is.
func privateDir(t *testing.T) string {
	t.Helper()
	d, err := state.EnsurePrivateDir(filepath.Join(t.TempDir(), "state"), "workspaces")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func call(t *testing.T, w *Workspace, name, args string) Result {
	t.Helper()
	r, err := w.Call(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return r
}

func wantOK(t *testing.T, r Result, contains ...string) {
	t.Helper()
	if r.IsError {
		t.Fatalf("tool error: %s", r.Text)
	}
	for _, c := range contains {
		if !strings.Contains(r.Text, c) {
			t.Fatalf("result lacks %q:\n%s", c, r.Text)
		}
	}
}

func wantToolError(t *testing.T, r Result, contains string) {
	t.Helper()
	if !r.IsError || !strings.Contains(r.Text, contains) {
		t.Fatalf("want a tool error with %q, got (error %v) %s", contains, r.IsError, r.Text)
	}
}

func TestCheckPathRefusesWhatIsNotARelativeCleanPath(t *testing.T) {
	for rel, want := range map[string]string{
		"":            "is empty",
		"/etc":        "absolute",
		`C:\fixture`:  "absolute",
		"c:fixture":   "absolute",
		`\\srv\share`: "absolute",
		"../fixture":  `".."`,
		"a/../../b":   `".."`,
		`a\b`:         `\ as a separator`,
		"./fixture":   `write it as "fixture"`,
		"fixture/":    `write it as "fixture"`,
		"a//b":        `write it as "a/b"`,
	} {
		err := CheckPath(rel)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), want) || e.Fix == "" {
			t.Errorf("CheckPath(%q) = %v, want a refusal with %q and a fix", rel, err, want)
		}
	}
	for _, ok := range []string{"fixture", "fixtures/app", "."} {
		if err := CheckPath(ok); err != nil {
			t.Errorf("CheckPath(%q) = %v", ok, err)
		}
	}
}

func TestLoadReadsTheWholeFixtureAndHashesIt(t *testing.T) {
	agentDir, f, _ := setup(t)
	if f.Files != len(sampleFixture) {
		t.Fatalf("Files = %d, want %d", f.Files, len(sampleFixture))
	}
	if !strings.HasPrefix(f.Hash, "sha256:") || len(f.Hash) != 7+64 {
		t.Fatalf("Hash = %q", f.Hash)
	}
	again, err := Load(agentDir, "fixture")
	if err != nil || again.Hash != f.Hash {
		t.Fatalf("a second Load gives %v, %v; want the same hash", again, err)
	}
	// One byte changed, one file renamed, one empty folder added: each
	// changes the hash, so earlier results go out of date.
	for name, change := range map[string]func(dir string){
		"content": func(d string) { writeTree(t, d, map[string]string{"calc/add.go": "package calc\n"}) },
		"rename": func(d string) {
			if err := os.Rename(filepath.Join(d, "docs/notes.txt"), filepath.Join(d, "docs/notes2.txt")); err != nil {
				t.Fatal(err)
			}
		},
		"folder": func(d string) {
			if err := os.Mkdir(filepath.Join(d, "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
		},
	} {
		dir := t.TempDir()
		writeTree(t, filepath.Join(dir, "fixture"), sampleFixture)
		change(filepath.Join(dir, "fixture"))
		g, err := Load(dir, "fixture")
		if err != nil {
			t.Fatal(err)
		}
		if g.Hash == f.Hash {
			t.Errorf("%s: the hash did not change", name)
		}
	}
}

func wantRefused(t *testing.T, err error, contains string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), contains) || e.Fix == "" {
		t.Fatalf("want a refusal with %q and a fix, got %v", contains, err)
	}
}

func TestLoadRefusesAFixtureThatIsMissingOrAFile(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir, "nope")
	wantRefused(t, err, "does not exist")
	writeTree(t, dir, map[string]string{"file.txt": "x"})
	_, err = Load(dir, "file.txt")
	wantRefused(t, err, "not a folder")
	_, err = Load(dir, "../x")
	wantRefused(t, err, `".."`)
	_, err = Load(dir, "/abs")
	wantRefused(t, err, "absolute")
}

func symlinkOrSkip(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		if runtime.GOOS == "windows" {
			t.Skipf("symbolic links need a privilege here: %v", err)
		}
		t.Fatal(err)
	}
}

func TestLoadRefusesASymlinkLeadingOut(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "private"})
	dir := t.TempDir()
	writeTree(t, filepath.Join(dir, "fixture"), sampleFixture)
	symlinkOrSkip(t, filepath.Join(outside, "secret.txt"), filepath.Join(dir, "fixture", "calc", "link.txt"))
	_, err := Load(dir, "fixture")
	wantRefused(t, err, "symbolic link calc/link.txt")
}

func TestLoadRefusesAFixtureThatIsASymlink(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, sampleFixture)
	dir := t.TempDir()
	symlinkOrSkip(t, outside, filepath.Join(dir, "fixture"))
	_, err := Load(dir, "fixture")
	wantRefused(t, err, "goes through the symbolic link fixture")
	// A link on the way to the fixture too.
	dir2 := t.TempDir()
	symlinkOrSkip(t, filepath.Dir(outside), filepath.Join(dir2, "parent"))
	_, err = Load(dir2, "parent/"+filepath.Base(outside))
	wantRefused(t, err, "goes through the symbolic link parent")
}

func TestLoadRefusesMoreThan2000Files(t *testing.T) {
	dir := t.TempDir()
	fx := filepath.Join(dir, "fixture")
	if err := os.Mkdir(fx, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < MaxFiles; i++ {
		if err := os.WriteFile(filepath.Join(fx, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if f, err := Load(dir, "fixture"); err != nil || f.Files != MaxFiles {
		t.Fatalf("exactly %d files: %v", MaxFiles, err)
	}
	if err := os.WriteFile(filepath.Join(fx, "one-more"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir, "fixture")
	wantRefused(t, err, "more than 2000 files")
}

func TestLoadRefusesMoreThan16MiB(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", MaxBytes/2)
	writeTree(t, filepath.Join(dir, "fixture"), map[string]string{"a.txt": big, "b.txt": big})
	if f, err := Load(dir, "fixture"); err != nil || f.Bytes != MaxBytes {
		t.Fatalf("exactly 16 MiB: %v", err)
	}
	writeTree(t, filepath.Join(dir, "fixture"), map[string]string{"c.txt": "x"})
	_, err := Load(dir, "fixture")
	wantRefused(t, err, "more than 16 MiB")
}

func TestLoadRefusesACredentialShapedValue(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, filepath.Join(dir, "fixture"), map[string]string{"env.txt": "TOKEN=ghp_" + strings.Repeat("a1B2", 9)})
	_, err := Load(dir, "fixture")
	wantRefused(t, err, "credential-shaped value (GitHub token) in env.txt")
	if strings.Contains(err.Error(), "ghp_") {
		t.Fatal("the refusal quotes the value")
	}
}

func TestMaterializeMakesAPrivateCopyAndRemoveDeletesIt(t *testing.T) {
	_, f, w := setup(t)
	for p, c := range sampleFixture {
		got, err := os.ReadFile(filepath.Join(w.Dir(), filepath.FromSlash(p)))
		if err != nil || string(got) != c {
			t.Fatalf("%s in the copy: %q, %v", p, got, err)
		}
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(w.Dir())
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("scratch folder mode %v, %v; want 0700", fi.Mode(), err)
		}
		fi, err = os.Stat(filepath.Join(w.Dir(), "calc", "add.go"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("scratch file mode %v, %v; want 0600", fi.Mode(), err)
		}
	}
	// Two copies never share edits.
	w2, err := f.Materialize(filepath.Dir(w.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, call(t, w, CreateFile, `{"filePath": "new.txt", "content": "one"}`))
	if _, err := os.Stat(filepath.Join(w2.Dir(), "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an edit of one copy shows in another: %v", err)
	}
	if err := w2.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w2.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Remove left the scratch folder: %v", err)
	}
	// Close keeps it (--keep-workspace).
	w3, err := f.Materialize(filepath.Dir(w.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w3.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w3.Dir(), "README.md")); err != nil {
		t.Fatalf("Close removed the copy: %v", err)
	}
}

func TestReadFileWholeAndLineRange(t *testing.T) {
	_, _, w := setup(t)
	r := call(t, w, ReadFile, `{"filePath": "calc/add.go"}`)
	if r.IsError || r.Text != sampleFixture["calc/add.go"] {
		t.Fatalf("whole file: %+v", r)
	}
	r = call(t, w, ReadFile, `{"filePath": "calc/add.go", "startLine": 4, "endLine": 5}`)
	wantOK(t, r, "calc/add.go, lines 4 to 5 of 6:\nfunc Add(a, b int) int {\n\treturn a - b\n")
	r = call(t, w, ReadFile, `{"filePath": "./calc/add.go", "startLine": 6, "endLine": 99}`)
	wantOK(t, r, "lines 6 to 6 of 6:\n}\n")
	wantToolError(t, call(t, w, ReadFile, `{"filePath": "calc/add.go", "startLine": 7, "endLine": 9}`), "past the end")
	wantToolError(t, call(t, w, ReadFile, `{"filePath": "calc/add.go", "startLine": 0, "endLine": 2}`), "1-based")
	wantToolError(t, call(t, w, ReadFile, `{"filePath": "calc/add.go", "startLine": 3, "endLine": 2}`), "before startLine")
	wantToolError(t, call(t, w, ReadFile, `{"filePath": "calc/add.go", "startLine": 1.5}`), "whole number")
	wantToolError(t, call(t, w, ReadFile, `{"filePath": "calc"}`), "is a folder")
	wantToolError(t, call(t, w, ReadFile, `{"filePath": "calc/none.go"}`), "does not exist")
	wantToolError(t, call(t, w, ReadFile, `{"path": "calc/add.go"}`), `does not take "path"`)
	wantToolError(t, call(t, w, ReadFile, `[1]`), "not one JSON object")
}

func TestToolPathEscapesAreToolErrors(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "private"})
	_, _, w := setup(t)
	abs := filepath.Join(outside, "secret.txt")
	for name, args := range map[string]string{
		"absolute":       `{"filePath": ` + quote(abs) + `}`,
		"absolute slash": `{"filePath": "/etc/passwd"}`,
		"file uri":       `{"filePath": "file:///etc/passwd"}`,
		"dot dot":        `{"filePath": "../secret.txt"}`,
		"inner dot dot":  `{"filePath": "calc/../../secret.txt"}`,
		"backslash":      `{"filePath": "..\\secret.txt"}`,
	} {
		r := call(t, w, ReadFile, args)
		if !r.IsError || strings.Contains(r.Text, "private") {
			t.Errorf("%s: %+v", name, r)
		}
	}
	// The same refusals hold for every tool that takes a path.
	wantToolError(t, call(t, w, ListDir, `{"path": "/"}`), "absolute")
	wantToolError(t, call(t, w, ListDir, `{"path": ".."}`), `".."`)
	wantToolError(t, call(t, w, CreateFile, `{"filePath": "../escape.txt", "content": "x"}`), `".."`)
	wantToolError(t, call(t, w, ListCodeUsages, `{"symbolName": "Add", "filePaths": ["/etc/passwd"]}`), "absolute")
	if _, err := os.Stat(filepath.Join(filepath.Dir(w.Dir()), "escape.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("an edit escaped the workspace")
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

func TestSymlinkInTheCopyIsRefused(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "private"})
	_, _, w := setup(t)
	symlinkOrSkip(t, filepath.Join(outside, "secret.txt"), filepath.Join(w.Dir(), "link.txt"))
	symlinkOrSkip(t, outside, filepath.Join(w.Dir(), "linkdir"))
	wantToolError(t, call(t, w, ReadFile, `{"filePath": "link.txt"}`), "symbolic link")
	wantToolError(t, call(t, w, ReadFile, `{"filePath": "linkdir/secret.txt"}`), "symbolic link")
	wantToolError(t, call(t, w, ListDir, `{"path": "linkdir"}`), "symbolic link")
	wantToolError(t, call(t, w, ReplaceString, `{"filePath": "link.txt", "oldString": "private", "newString": "changed"}`), "symbolic link")
	wantToolError(t, call(t, w, CreateFile, `{"filePath": "linkdir/new.txt", "content": "x"}`), "symbolic link")
	// Searches never follow a link either.
	r := call(t, w, GrepSearch, `{"query": "private", "isRegexp": false}`)
	if strings.Contains(r.Text, "secret") || strings.Contains(r.Text, "private\n") {
		t.Fatalf("grep followed a link: %s", r.Text)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(got) != "private" {
		t.Fatal("the file outside changed")
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a file was created outside")
	}
}

// A folder the model already read is swapped for a link leading out during
// the run: the next read and edit through it are refused.
func TestSymlinkSwappedInDuringTheRunIsRefused(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"add.go": "outside"})
	_, _, w := setup(t)
	wantOK(t, call(t, w, ReadFile, `{"filePath": "calc/add.go"}`), "func Add")
	if err := os.RemoveAll(filepath.Join(w.Dir(), "calc")); err != nil {
		t.Fatal(err)
	}
	symlinkOrSkip(t, outside, filepath.Join(w.Dir(), "calc"))
	r := call(t, w, ReadFile, `{"filePath": "calc/add.go"}`)
	wantToolError(t, r, "symbolic link")
	wantToolError(t, call(t, w, ReplaceString, `{"filePath": "calc/add.go", "oldString": "outside", "newString": "x"}`), "symbolic link")
	// The file itself swapped for a link: refused too.
	if err := os.Remove(filepath.Join(w.Dir(), "README.md")); err != nil {
		t.Fatal(err)
	}
	symlinkOrSkip(t, filepath.Join(outside, "add.go"), filepath.Join(w.Dir(), "README.md"))
	wantToolError(t, call(t, w, ReadFile, `{"filePath": "README.md"}`), "symbolic link")
	wantToolError(t, call(t, w, InsertEdit, `{"explanation": "x", "filePath": "README.md", "code": "y"}`), "symbolic link")
	if got, _ := os.ReadFile(filepath.Join(outside, "add.go")); string(got) != "outside" {
		t.Fatal("the file outside changed")
	}
	// Even past the check, the os.Root refuses to open through a link
	// leading out (the race the Lstat cannot close).
	if _, err := readRegular(w.root, "calc/add.go", MaxBytes); err == nil {
		t.Fatal("readRegular opened a file through a link leading out")
	}
}

func TestEditToADirectoryIsAToolError(t *testing.T) {
	_, _, w := setup(t)
	wantToolError(t, call(t, w, ReplaceString, `{"filePath": "calc", "oldString": "a", "newString": "b"}`), "not a regular file")
	wantToolError(t, call(t, w, InsertEdit, `{"explanation": "e", "filePath": "docs", "code": "x"}`), "not a regular file")
	wantToolError(t, call(t, w, CreateFile, `{"filePath": "docs", "content": "x"}`), "is a folder")
	wantToolError(t, call(t, w, MultiReplace, `{"replacements": [{"filePath": "calc", "oldString": "a", "newString": "b"}]}`), "not a regular file")
	wantToolError(t, call(t, w, CreateDirectory, `{"dirPath": "README.md"}`), "not a folder")
	if fi, err := os.Stat(filepath.Join(w.Dir(), "calc")); err != nil || !fi.IsDir() {
		t.Fatal("the folder changed")
	}
}

func TestListDirAndFileSearch(t *testing.T) {
	_, _, w := setup(t)
	r := call(t, w, ListDir, `{"path": "."}`)
	if r.IsError || r.Text != "README.md\ncalc/\ndocs/\n" {
		t.Fatalf("list_dir .: %q", r.Text)
	}
	wantOK(t, call(t, w, ListDir, `{"path": "calc"}`), "add.go\nadd_test.go\nmul.go\n")
	wantToolError(t, call(t, w, ListDir, `{"path": "README.md"}`), "is a file")
	for glob, want := range map[string]string{
		"**/*.go":          "calc/add.go\ncalc/add_test.go\ncalc/mul.go\n",
		"*.go":             "calc/add.go\ncalc/add_test.go\ncalc/mul.go\n",
		"calc/*_test.go":   "calc/add_test.go\n",
		"**/*.{md,txt}":    "README.md\ndocs/notes.txt\n",
		"calc/[am]*.go":    "calc/add.go\ncalc/add_test.go\ncalc/mul.go\n",
		"calc/[!a]*.go":    "calc/mul.go\n",
		"docs/**":          "docs/notes.txt\n",
		"nothing/**/*.zig": "No files match",
	} {
		r := call(t, w, FileSearch, `{"query": `+quote(glob)+`}`)
		if r.IsError || !strings.HasPrefix(r.Text, want) {
			t.Errorf("file_search %q = %q, want %q", glob, r.Text, want)
		}
	}
	r = call(t, w, FileSearch, `{"query": "**/*.go", "maxResults": 1}`)
	wantOK(t, r, "calc/add.go\n[1 of 3 matching files shown]")
	wantToolError(t, call(t, w, FileSearch, `{"query": "calc/[ab"}`), "without its ]")
}

func TestGrepSearchLiteralAndRegex(t *testing.T) {
	_, _, w := setup(t)
	r := call(t, w, GrepSearch, `{"query": "add(", "isRegexp": false}`)
	wantOK(t, r, "calc/add.go:4: func Add(a, b int) int {", "calc/add_test.go:6: \tif Add(2, 2) != 4 {", "calc/mul.go:7: \t\tr = Add(r, a)")
	r = call(t, w, GrepSearch, `{"query": "return a [-+] b", "isRegexp": true}`)
	if r.IsError || r.Text != "calc/add.go:5: \treturn a - b\n" {
		t.Fatalf("regex: %q", r.Text)
	}
	r = call(t, w, GrepSearch, `{"query": "add", "isRegexp": false, "includePattern": "**/*_test.go"}`)
	if r.IsError || strings.Contains(r.Text, "calc/add.go:") || !strings.Contains(r.Text, "calc/add_test.go:") {
		t.Fatalf("includePattern: %q", r.Text)
	}
	wantOK(t, call(t, w, GrepSearch, `{"query": "zebra", "isRegexp": false}`), "No matches")
	wantToolError(t, call(t, w, GrepSearch, `{"query": "(", "isRegexp": true}`), "not a valid regular expression")
	r = call(t, w, GrepSearch, `{"query": "a", "isRegexp": false, "maxResults": 2}`)
	wantOK(t, r, "[2 of ")
}

func TestCodebaseIsARankedTextSearch(t *testing.T) {
	_, _, w := setup(t)
	r := call(t, w, SemanticSearch, `{"query": "where is Add defined? multiplies"}`)
	wantOK(t, r, "Ranked text search (not semantic)")
	// mul.go holds both "add" and "multiplies": it ranks first.
	first := strings.SplitN(strings.SplitN(r.Text, "\n\n", 2)[1], "\n", 2)[0]
	if first != "calc/mul.go" {
		t.Fatalf("first hit %q, want calc/mul.go:\n%s", first, r.Text)
	}
	wantOK(t, call(t, w, SemanticSearch, `{"query": "zebra giraffe"}`), "No file holds")
	wantToolError(t, call(t, w, SemanticSearch, `{"query": "?"}`), "no words")
}

func TestUsagesIsAWholeWordTextSearch(t *testing.T) {
	_, _, w := setup(t)
	r := call(t, w, ListCodeUsages, `{"symbolName": "Add", "filePaths": ["calc/add.go"]}`)
	wantOK(t, r, "not a language server", "calc/add.go:4:", "calc/mul.go:7:", "calc/add_test.go:6:")
	// "Add" inside "TestAdd" is not a whole word.
	if strings.Contains(r.Text, "calc/add_test.go:5:") {
		t.Fatalf("matched inside a word: %s", r.Text)
	}
}

func TestResultsAreBoundedWithATruncationNote(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; b.Len() < 100<<10; i++ {
		b.WriteString("line with a needle in it, number " + strconv.Itoa(i) + "\n")
	}
	writeTree(t, filepath.Join(dir, "fixture"), map[string]string{"big.txt": b.String()})
	f, err := Load(dir, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.Materialize(privateDir(t))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Remove()
	for name, args := range map[string]string{
		ReadFile:   `{"filePath": "big.txt"}`,
		GrepSearch: `{"query": "needle", "isRegexp": false, "maxResults": 1000}`,
	} {
		r := call(t, w, name, args)
		if r.IsError || len(r.Text) > MaxResultBytes || !strings.Contains(r.Text, "[kmx: result truncated at 32 KiB") {
			t.Errorf("%s: %d bytes, note %v", name, len(r.Text), strings.Contains(r.Text, "truncated"))
		}
	}
}

func TestEditsChangeTheCopyAndChangesReportThem(t *testing.T) {
	_, _, w := setup(t)
	wantOK(t, call(t, w, ReplaceString, `{"filePath": "calc/add.go", "oldString": "return a - b", "newString": "return a + b", "explanation": "fix"}`), "Edited calc/add.go")
	wantToolError(t, call(t, w, ReplaceString, `{"filePath": "calc/add.go", "oldString": "return a - b", "newString": "x"}`), "not found")
	wantToolError(t, call(t, w, ReplaceString, `{"filePath": "calc/mul.go", "oldString": "r", "newString": "x"}`), "occurs")
	wantOK(t, call(t, w, CreateFile, `{"filePath": "calc/sub/sub.go", "content": "package sub\n"}`), "Created calc/sub/sub.go")
	wantToolError(t, call(t, w, CreateFile, `{"filePath": "README.md", "content": "x"}`), "already exists")
	wantOK(t, call(t, w, InsertEdit, `{"explanation": "rewrite", "filePath": "docs/notes.txt", "code": "Something to see.\n"}`), "Edited docs/notes.txt")
	wantToolError(t, call(t, w, InsertEdit, `{"explanation": "e", "filePath": "README.md", "code": "// ...existing code...\nmore"}`), "does not expand")
	wantOK(t, call(t, w, CreateDirectory, `{"dirPath": "empty/inner"}`), "Created the folder")
	changes, err := w.Changes()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Kind+" "+c.Path)
	}
	want := "modified calc/add.go,added calc/sub/sub.go,modified docs/notes.txt"
	if strings.Join(got, ",") != want {
		t.Fatalf("changes %v, want %s", got, want)
	}
	c := changes[0]
	if !strings.Contains(string(c.Content), "return a + b") || !strings.Contains(string(c.BeforeContent), "return a - b") || c.Hash == "" || c.BeforeHash == "" {
		t.Fatalf("change of add.go: %+v", c)
	}
	// No temporary file is left behind by an edit.
	entries, _ := os.ReadDir(filepath.Join(w.Dir(), "calc"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".kmx-") {
			t.Fatalf("left %s", e.Name())
		}
	}
}

func TestMultiReplaceAppliesAllOrNothing(t *testing.T) {
	_, _, w := setup(t)
	r := call(t, w, MultiReplace, `{"explanation": "x", "replacements": [
		{"filePath": "calc/add.go", "oldString": "return a - b", "newString": "return a + b"},
		{"filePath": "README.md", "oldString": "zebra", "newString": "x"}]}`)
	wantToolError(t, r, "replacement 2")
	if ch, _ := w.Changes(); len(ch) != 0 {
		t.Fatalf("a failed multi-replace changed %v", ch)
	}
	r = call(t, w, MultiReplace, `{"replacements": [
		{"filePath": "calc/add.go", "oldString": "return a - b", "newString": "return a + b"},
		{"filePath": "calc/add.go", "oldString": "plus", "newString": "added to"},
		{"filePath": "README.md", "oldString": "tiny", "newString": "small"}]}`)
	wantOK(t, r, "Applied 3 replacements in calc/add.go, README.md")
	if ch, _ := w.Changes(); len(ch) != 2 {
		t.Fatalf("changes %v", ch)
	}
}

func TestChangesKeepLargeFilesByHashOnly(t *testing.T) {
	dir := t.TempDir()
	big := "HEAD\n" + strings.Repeat("0123456789abcdef", (MaxJournaledFileBytes/16)+1)
	writeTree(t, filepath.Join(dir, "fixture"), map[string]string{"big.txt": big, "small.txt": "a\n"})
	f, err := Load(dir, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.Materialize(privateDir(t))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Remove()
	wantOK(t, call(t, w, ReplaceString, `{"filePath": "big.txt", "oldString": "HEAD", "newString": "X"}`))
	wantOK(t, call(t, w, ReplaceString, `{"filePath": "small.txt", "oldString": "a", "newString": "b"}`))
	ch, err := w.Changes()
	if err != nil || len(ch) != 2 {
		t.Fatalf("%v %v", ch, err)
	}
	if !ch[0].Omitted || ch[0].Content != nil || ch[0].Hash != digest([]byte(strings.Replace(big, "HEAD", "X", 1))) || !ch[0].BeforeOmitted {
		t.Fatalf("big.txt: omitted %v, hash %s", ch[0].Omitted, ch[0].Hash)
	}
	if ch[1].Omitted || string(ch[1].Content) != "b\n" {
		t.Fatalf("small.txt: %+v", ch[1])
	}
}

// snapshot is every entry of a folder: kind, mode, size, time and bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		s := fi.Mode().String() + " " + fi.ModTime().String()
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s += " " + string(data)
		}
		out[p] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTheUsersFixtureIsLeftByteForByteUnchanged(t *testing.T) {
	agentDir, _, w := setup(t)
	before := snapshot(t, agentDir)
	wantOK(t, call(t, w, ReplaceString, `{"filePath": "calc/add.go", "oldString": "return a - b", "newString": "return a + b"}`))
	wantOK(t, call(t, w, CreateFile, `{"filePath": "new/file.txt", "content": "x"}`))
	wantOK(t, call(t, w, InsertEdit, `{"explanation": "e", "filePath": "README.md", "code": "gone"}`))
	wantOK(t, call(t, w, MultiReplace, `{"replacements": [{"filePath": "docs/notes.txt", "oldString": "Nothing", "newString": "All"}]}`))
	wantOK(t, call(t, w, CreateDirectory, `{"dirPath": "d"}`))
	if err := w.Remove(); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, agentDir)
	if len(before) != len(after) {
		t.Fatalf("the fixture has %d entries, had %d", len(after), len(before))
	}
	for p, s := range before {
		if after[p] != s {
			t.Fatalf("%s changed", p)
		}
	}
}

func TestCancelledContextIsNotAResult(t *testing.T) {
	_, _, w := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Call(ctx, ReadFile, `{"filePath": "README.md"}`); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if _, err := w.Call(context.Background(), "run_in_terminal", `{}`); !errors.Is(err, ErrNotWorkspaceTool) {
		t.Fatalf("err = %v", err)
	}
}
