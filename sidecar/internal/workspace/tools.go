package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// The tools a Workspace answers, by the full reference names of VS Code's
// table (package vscodetools, the one source of tool names): the model
// calls each by the table's function name (read_readFile for
// read/readFile), the harness finds the offered tool by that function name,
// and the tool's name is what Call takes. Each accepts the argument names
// of the table's schema. edit/editFiles is the one-occurrence replacement
// (VS Code's replace_string_in_file, the schema the table gives it).
const (
	ReadFile        = "read/readFile"
	ListDir         = "search/listDirectory"
	FileSearch      = "search/fileSearch"
	GrepSearch      = "search/textSearch"
	SemanticSearch  = "search/codebase"
	ListCodeUsages  = "search/usages"
	CreateFile      = "edit/createFile"
	CreateDirectory = "edit/createDirectory"
	ReplaceString   = "edit/editFiles"
)

// MultiReplace and InsertEdit are two edits VS Code's edit/editFiles can
// also turn on (copilot_multiReplaceString, copilot_insertEdit). The table
// offers edit/editFiles with the one-replacement schema only, so no route
// offers these two to a model yet; Call answers them under these names for
// kmx's own use and tests.
const (
	MultiReplace = "edit/editFiles#multiReplace"
	InsertEdit   = "edit/editFiles#insertEdit"
)

// ReadTools and EditTools list the tools a workspace answers for a model
// (the table's names); an edit changes the copy.
var (
	ReadTools = []string{ReadFile, ListDir, FileSearch, GrepSearch, SemanticSearch, ListCodeUsages}
	EditTools = []string{CreateFile, CreateDirectory, ReplaceString}
)

// Answers reports whether a Workspace answers the VS Code tool with the
// full reference name ref (vscodetools' canonical name). Terminal, task,
// test, notebook, web and extension tools are never answered here.
func Answers(ref string) bool { return isOneOf(ref, ReadTools) || isOneOf(ref, EditTools) }

// IsEdit reports whether the tool changes the workspace.
func IsEdit(ref string) bool {
	return isOneOf(ref, EditTools) || ref == MultiReplace || ref == InsertEdit
}

func isOneOf(s string, list []string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ErrNotWorkspaceTool is Call's error for a name Answers refuses: the
// caller offered a tool the workspace does not own.
var ErrNotWorkspaceTool = errors.New("not a workspace tool")

// Result is what one call gives the model. IsError marks a tool error (a
// refused path, a missing file, an edit that did not apply): the model sees
// the text, and the turn goes on.
type Result struct {
	Text    string
	IsError bool
}

// Call answers one tool call inside the scratch copy. arguments is the
// call's JSON object, in the shape VS Code's tool schema gives it. The
// error is non-nil only for a cancelled context, a name the workspace does
// not answer, or a scratch folder that cannot be read at all; everything
// the model did wrong is a Result with IsError.
func (w *Workspace) Call(ctx context.Context, name, arguments string) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var text string
	var err error
	switch name {
	case ReadFile:
		text, err = w.readFile(arguments)
	case ListDir:
		text, err = w.listDir(arguments)
	case FileSearch:
		text, err = w.fileSearch(ctx, arguments)
	case GrepSearch:
		text, err = w.grepSearch(ctx, arguments)
	case SemanticSearch:
		text, err = w.codebase(ctx, arguments)
	case ListCodeUsages:
		text, err = w.usages(ctx, arguments)
	case CreateFile:
		text, err = w.createFile(arguments)
	case CreateDirectory:
		text, err = w.createDirectory(arguments)
	case ReplaceString:
		text, err = w.replaceString(arguments)
	case MultiReplace:
		text, err = w.multiReplace(arguments)
	case InsertEdit:
		text, err = w.insertEdit(arguments)
	default:
		return Result{}, fmt.Errorf("%w: %q", ErrNotWorkspaceTool, name)
	}
	var te *toolError
	var pe *toolPathError
	switch {
	case err == nil:
		return Result{Text: text}, nil
	case errors.As(err, &te) || errors.As(err, &pe):
		return Result{Text: "Error: " + err.Error(), IsError: true}, nil
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	default:
		return Result{}, err
	}
}

// readText reads a regular file of the copy as UTF-8 text.
func (w *Workspace) readText(r resolved) (string, error) {
	if r.info == nil {
		return "", toolErr("%s does not exist in the workspace", r.rel)
	}
	if r.info.IsDir() {
		return "", toolErr("%s is a folder, not a file: use search_listDirectory", r.rel)
	}
	data, err := readRegular(w.root, r.rel, MaxBytes)
	if err != nil {
		return "", toolErr("%s could not be read as a regular file", r.rel)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return "", toolErr("%s is not UTF-8 text: the workspace tools read text files only", r.rel)
	}
	return string(data), nil
}

// splitLines splits text into lines without their line breaks.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func (w *Workspace) readFile(arguments string) (string, error) {
	a, err := decodeArgs(ReadFile, arguments, "filePath", "startLine", "endLine")
	if err != nil {
		return "", err
	}
	p, err := a.str("filePath", true)
	if err != nil {
		return "", err
	}
	r, err := w.resolve(p, false)
	if err != nil {
		return "", err
	}
	text, err := w.readText(r)
	if err != nil {
		return "", err
	}
	start, hasStart, err := a.integer("startLine")
	if err != nil {
		return "", err
	}
	end, hasEnd, err := a.integer("endLine")
	if err != nil {
		return "", err
	}
	if !hasStart && !hasEnd {
		return bound(text, "Read a line range (startLine, endLine)."), nil
	}
	lines := splitLines(text)
	if !hasStart {
		start = 1
	}
	if !hasEnd || end > len(lines) {
		end = len(lines)
	}
	switch {
	case start < 1:
		return "", toolErr("startLine is 1-based: %d is before the first line", start)
	case len(lines) == 0:
		return "", toolErr("%s is empty", r.rel)
	case start > len(lines):
		return "", toolErr("%s has %d lines; startLine %d is past the end", r.rel, len(lines), start)
	case end < start:
		return "", toolErr("endLine %d is before startLine %d", end, start)
	}
	head := fmt.Sprintf("%s, lines %d to %d of %d:\n", r.rel, start, end, len(lines))
	return bound(head+strings.Join(lines[start-1:end], "\n")+"\n", "Read a smaller line range."), nil
}

func (w *Workspace) listDir(arguments string) (string, error) {
	a, err := decodeArgs(ListDir, arguments, "path")
	if err != nil {
		return "", err
	}
	p, err := a.str("path", true)
	if err != nil {
		return "", err
	}
	r, err := w.resolve(p, false)
	if err != nil {
		return "", err
	}
	switch {
	case r.info == nil:
		return "", toolErr("%s does not exist in the workspace", r.rel)
	case !r.info.IsDir():
		return "", toolErr("%s is a file, not a folder: use read_readFile", r.rel)
	}
	entries, err := fs.ReadDir(w.root.FS(), r.rel)
	if err != nil {
		return "", toolErr("%s could not be listed", r.rel)
	}
	var b strings.Builder
	for _, e := range entries {
		switch {
		case e.IsDir():
			b.WriteString(e.Name() + "/\n")
		case e.Type().IsRegular():
			b.WriteString(e.Name() + "\n")
		}
	}
	if b.Len() == 0 {
		return r.rel + " is empty.", nil
	}
	return bound(b.String(), "List a deeper folder."), nil
}

// file is one regular file found by a walk of the copy.
type file struct {
	rel  string
	text string // "" when it is not UTF-8 text
	ok   bool   // UTF-8 text without NUL
}

// walk lists the copy's regular files in path order, never following a
// link; text is read when read is set.
func (w *Workspace) walk(ctx context.Context, read bool) ([]file, error) {
	var out []file
	err := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f := file{rel: p}
		if read {
			if data, err := readRegular(w.root, p, MaxBytes); err == nil && bytes.IndexByte(data, 0) < 0 && utf8.Valid(data) {
				f.text, f.ok = string(data), true
			}
		}
		out = append(out, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk the scratch workspace: %w", err)
	}
	return out, nil
}

// maxResults reads an optional maxResults (1 to 1000, default def).
func maxResults(a args, def int) (int, error) {
	n, ok, err := a.integer("maxResults")
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return def, nil
	case n < 1 || n > 1000:
		return 0, toolErr("maxResults must be 1 to 1000")
	}
	return n, nil
}

func (w *Workspace) fileSearch(ctx context.Context, arguments string) (string, error) {
	a, err := decodeArgs(FileSearch, arguments, "query", "maxResults")
	if err != nil {
		return "", err
	}
	q, err := a.str("query", true)
	if err != nil {
		return "", err
	}
	limit, err := maxResults(a, 200)
	if err != nil {
		return "", err
	}
	re, nameToo, err := compileGlob(q)
	if err != nil {
		return "", err
	}
	files, err := w.walk(ctx, false)
	if err != nil {
		return "", err
	}
	var hits []string
	total := 0
	for _, f := range files {
		if globMatch(re, nameToo, f.rel) {
			total++
			if len(hits) < limit {
				hits = append(hits, f.rel)
			}
		}
	}
	if total == 0 {
		return fmt.Sprintf("No files match %q.", q), nil
	}
	text := strings.Join(hits, "\n") + "\n"
	if total > len(hits) {
		text += fmt.Sprintf("[%d of %d matching files shown]\n", len(hits), total)
	}
	return bound(text, "Use a more specific glob."), nil
}

func (w *Workspace) grepSearch(ctx context.Context, arguments string) (string, error) {
	a, err := decodeArgs(GrepSearch, arguments, "query", "isRegexp", "includePattern", "maxResults")
	if err != nil {
		return "", err
	}
	q, err := a.str("query", true)
	if err != nil {
		return "", err
	}
	if q == "" {
		return "", toolErr("search_textSearch needs a non-empty query")
	}
	isRe, err := a.boolean("isRegexp", false)
	if err != nil {
		return "", err
	}
	include, err := a.str("includePattern", false)
	if err != nil {
		return "", err
	}
	limit, err := maxResults(a, 200)
	if err != nil {
		return "", err
	}
	pattern := regexp.QuoteMeta(q)
	if isRe {
		pattern = q
	}
	// VS Code's text search is case-insensitive.
	re, err := regexp.Compile("(?i)" + pattern)
	if err != nil {
		return "", toolErr("the query is not a valid regular expression (RE2 syntax): %v", err)
	}
	return w.lineSearch(ctx, re, include, limit, fmt.Sprintf("No matches for %q.", q))
}

// lineSearch lists "path:line: text" for every line re matches, in path
// order, files filtered by an optional include glob.
func (w *Workspace) lineSearch(ctx context.Context, re *regexp.Regexp, include string, limit int, none string) (string, error) {
	var inc *regexp.Regexp
	incName := false
	if include != "" {
		var err error
		if inc, incName, err = compileGlob(include); err != nil {
			return "", err
		}
	}
	files, err := w.walk(ctx, true)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	shown, total := 0, 0
	for _, f := range files {
		if !f.ok || (inc != nil && !globMatch(inc, incName, f.rel)) {
			continue
		}
		for i, line := range splitLines(f.text) {
			if !re.MatchString(line) {
				continue
			}
			total++
			if shown < limit {
				shown++
				fmt.Fprintf(&b, "%s:%d: %s\n", f.rel, i+1, clip(line))
			}
		}
	}
	if total == 0 {
		return none, nil
	}
	if total > shown {
		fmt.Fprintf(&b, "[%d of %d matching lines shown]\n", shown, total)
	}
	return bound(b.String(), "Narrow the query or the includePattern."), nil
}

var wordRE = regexp.MustCompile(`[\pL\pN_]{3,}`)

// stopWords are question words too common to rank by.
var stopWords = map[string]bool{
	"the": true, "and": true, "for": true, "with": true, "that": true, "this": true, "are": true,
	"where": true, "what": true, "which": true, "how": true, "does": true, "from": true, "into": true,
}

// codebase is a ranked text search, not a semantic one: files are scored
// by how many of the query's words (three letters or more, common
// question words left out) they hold (rarer words weigh more, a
// word in the path counts too), and each is shown with its best lines.
func (w *Workspace) codebase(ctx context.Context, arguments string) (string, error) {
	a, err := decodeArgs(SemanticSearch, arguments, "query")
	if err != nil {
		return "", err
	}
	q, err := a.str("query", true)
	if err != nil {
		return "", err
	}
	seen := map[string]bool{}
	var terms []string
	for _, t := range wordRE.FindAllString(strings.ToLower(q), -1) {
		if !seen[t] && !stopWords[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		return "", toolErr("the query has no words to search for")
	}
	files, err := w.walk(ctx, true)
	if err != nil {
		return "", err
	}
	type scored struct {
		f     file
		lower string
		score float64
	}
	var docs []scored
	df := make([]int, len(terms))
	for _, f := range files {
		if !f.ok {
			continue
		}
		d := scored{f: f, lower: strings.ToLower(f.rel + "\n" + f.text)}
		for i, t := range terms {
			if strings.Contains(d.lower, t) {
				df[i]++
			}
		}
		docs = append(docs, d)
	}
	for i := range docs {
		for j, t := range terms {
			if n := strings.Count(docs[i].lower, t); n > 0 {
				idf := math.Log(1 + float64(len(docs))/float64(df[j]))
				docs[i].score += idf * (1 + math.Log(float64(n)))
			}
		}
	}
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].score > docs[j].score })
	var b strings.Builder
	b.WriteString("Ranked text search (not semantic): files sharing the most words with the query, best first.\n")
	shown := 0
	for _, d := range docs {
		if d.score == 0 || shown == 10 {
			break
		}
		shown++
		fmt.Fprintf(&b, "\n%s\n", d.f.rel)
		// The file's three lines holding the most query words.
		type hit struct{ n, words int }
		var hits []hit
		for i, line := range splitLines(d.f.text) {
			l := strings.ToLower(line)
			c := 0
			for _, t := range terms {
				if strings.Contains(l, t) {
					c++
				}
			}
			if c > 0 {
				hits = append(hits, hit{i, c})
			}
		}
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].words > hits[j].words })
		if len(hits) > 3 {
			hits = hits[:3]
		}
		sort.Slice(hits, func(i, j int) bool { return hits[i].n < hits[j].n })
		lines := splitLines(d.f.text)
		for _, h := range hits {
			fmt.Fprintf(&b, "  %d: %s\n", h.n+1, clip(lines[h.n]))
		}
	}
	if shown == 0 {
		return fmt.Sprintf("No file holds any word of %q.", q), nil
	}
	return bound(b.String(), "Use fewer, more specific words."), nil
}

// usages is a plain text search for the symbol as a whole word: every
// occurrence, definitions and references alike, with no language server.
func (w *Workspace) usages(ctx context.Context, arguments string) (string, error) {
	// VS Code 1.111's schema says symbol and filePath; Copilot Chat's
	// older one symbolName and filePaths. Either is taken, not both.
	a, err := decodeArgs(ListCodeUsages, arguments, "symbol", "filePath", "symbolName", "filePaths")
	if err != nil {
		return "", err
	}
	key := "symbol"
	if a.has("symbolName") {
		key = "symbolName"
		if a.has("symbol") {
			return "", toolErr("give symbol or symbolName, not both")
		}
	}
	sym, err := a.str(key, true)
	if err != nil {
		return "", err
	}
	sym = strings.TrimSpace(sym)
	if sym == "" || len(sym) > 200 || strings.ContainsAny(sym, "\n\r") {
		return "", toolErr("symbolName must be one name on one line")
	}
	paths, err := a.strings("filePaths")
	if err != nil {
		return "", err
	}
	one, err := a.str("filePath", false)
	if err != nil {
		return "", err
	}
	if one != "" {
		paths = append(paths, one)
	}
	for _, p := range paths {
		// The paths are only hints; a bad one is still refused, so no path
		// outside the workspace is ever looked at.
		if _, err := w.resolve(p, false); err != nil {
			return "", err
		}
	}
	pattern := regexp.QuoteMeta(sym)
	if isWordByte(sym[0]) {
		pattern = `\b` + pattern
	}
	if isWordByte(sym[len(sym)-1]) {
		pattern += `\b`
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", toolErr("symbolName cannot be searched for")
	}
	text, err := w.lineSearch(ctx, re, "", 200, fmt.Sprintf("No usages of %q.", sym))
	if err != nil {
		return "", err
	}
	return "Plain text search for the word " + sym + " (not a language server: definitions and references alike):\n" + text, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
