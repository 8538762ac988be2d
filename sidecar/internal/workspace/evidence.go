package workspace

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// MaxEvidenceBytes bounds each side of a failed file assertion's
// Evidence: the editor shows at most this much of a file.
const MaxEvidenceBytes = 8 << 10

// Evidence is what a failed file assertion expected and what the turn
// left, as two texts an editor can show as a diff: for fileContains the
// text against the file's final content; for fileNotContains the content
// without the forbidden text against the content; for fileMatches the
// pattern against the content; for fileUnchanged the fixture's bytes
// against the final ones; for filesChanged the expected paths against the
// changed ones, one a line. Each side is cut at MaxEvidenceBytes with a
// note saying how much was left out. ok is false when there is nothing
// to show as a diff (the file's content was not kept, it is not text, or
// a side holds credential-shaped text, which is never shown).
func Evidence(kind, path, operand string, paths []string, o Outcome) (expected, actual string, ok bool) {
	switch kind {
	case FilesChanged:
		var got []string
		for _, c := range o.Changes {
			got = append(got, c.Path)
		}
		want := append([]string(nil), paths...)
		sort.Strings(want)
		return shown(lines(want), lines(got))
	case FileUnchanged:
		for _, c := range o.Changes {
			if c.Path != path {
				continue
			}
			if c.Omitted || c.BeforeOmitted || c.NotRegular {
				return "", "", false
			}
			after := string(c.Content)
			if c.Kind == Deleted {
				after = fmt.Sprintf("(%s was deleted)", path)
			}
			before := string(c.BeforeContent)
			if c.Kind == Added {
				before = fmt.Sprintf("(%s did not exist)", path)
			}
			return shown(before, after)
		}
		return "", "", false
	}
	var fs *FileState
	for i := range o.Files {
		if o.Files[i].Path == path {
			fs = &o.Files[i]
		}
	}
	if fs == nil || fs.Omitted || fs.NotRegular {
		return "", "", false
	}
	content := string(fs.Content)
	if !fs.Exists {
		content = fmt.Sprintf("(%s does not exist after the turn)", path)
	}
	switch kind {
	case FileContains, FileMatches:
		return shown(operand, content)
	case FileNotContains:
		if !fs.Exists {
			return "", "", false
		}
		return shown(strings.ReplaceAll(content, operand, ""), content)
	}
	return "", "", false
}

func lines(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return strings.Join(ss, "\n") + "\n"
}

// shown bounds both sides and withholds them when either holds
// credential-shaped text or is not valid UTF-8.
func shown(expected, actual string) (string, string, bool) {
	expected, actual = bounded(expected), bounded(actual)
	for _, s := range []string{expected, actual} {
		if !utf8.ValidString(s) || len(secrets.Scan(s)) > 0 {
			return "", "", false
		}
	}
	return expected, actual, true
}

func bounded(s string) string {
	if len(s) <= MaxEvidenceBytes {
		return s
	}
	cut := MaxEvidenceBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%d more bytes not shown)", len(s)-cut)
}
