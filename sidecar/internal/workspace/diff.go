package workspace

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the line-matching table of one diff (lines before ×
// lines after); a bigger change is shown as every line replaced.
const maxDiffCells = 4 << 20

// Diff renders one change as a unified diff (3 lines of context), the form
// the CLI prints for a failing example. A side kept by hash only, or a
// path that is no longer a regular file, is named instead of diffed.
func Diff(c Change) string {
	var b strings.Builder
	before, after := "a/"+c.Path, "b/"+c.Path
	switch c.Kind {
	case Added:
		before = "/dev/null"
	case Deleted:
		after = "/dev/null"
	}
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", before, after)
	switch {
	case c.NotRegular:
		b.WriteString("(" + c.Path + " is no longer a regular file)\n")
		return b.String()
	case c.Omitted || c.BeforeOmitted:
		fmt.Fprintf(&b, "(over %d KiB: kept by hash only; before %s, after %s)\n", MaxJournaledFileBytes>>10, orNone(c.BeforeHash), orNone(c.Hash))
		return b.String()
	}
	old, new := diffLines(string(c.BeforeContent)), diffLines(string(c.Content))
	for _, h := range hunks(editScript(old, new), 3) {
		b.WriteString(h)
	}
	return b.String()
}

func orNone(h string) string {
	if h == "" {
		return "none"
	}
	return h
}

// diffLines splits text into lines that keep their line breaks; a last
// line without one is marked as git marks it.
func diffLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, "\n") {
		lines[len(lines)-1] = last + "\n\\ No newline at end of file\n"
	}
	return lines
}

// op is one line of an edit script: ' ' kept, '-' removed, '+' added.
type op struct {
	kind       byte
	line       string
	oldN, newN int // 1-based line numbers on each side (0: none)
}

// editScript is a shortest edit script by longest common subsequence.
func editScript(old, new []string) []op {
	n, m := len(old), len(new)
	if n*m > maxDiffCells {
		var out []op
		for i, l := range old {
			out = append(out, op{'-', l, i + 1, 0})
		}
		for j, l := range new {
			out = append(out, op{'+', l, 0, j + 1})
		}
		return out
	}
	// lcs[i][j]: the common subsequence length of old[i:] and new[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if old[i] == new[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && old[i] == new[j]:
			out = append(out, op{' ', old[i], i + 1, j + 1})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			// Removals before additions, as diff prints them.
			out = append(out, op{'-', old[i], i + 1, 0})
			i++
		default:
			out = append(out, op{'+', new[j], 0, j + 1})
			j++
		}
	}
	return out
}

// hunks groups an edit script into unified-diff hunks with ctx lines of
// context around each run of changes.
func hunks(script []op, ctx int) []string {
	var out []string
	for i := 0; i < len(script); {
		if script[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-ctx)
		end := i
		for end < len(script) {
			if script[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(script) && script[run].kind == ' ' {
				run++
			}
			if run == len(script) || run-end > 2*ctx {
				end = min(len(script), end+ctx)
				break
			}
			end = run
		}
		var body strings.Builder
		oldStart, newStart, oldLen, newLen := 0, 0, 0, 0
		oldLine, newLine := lineBefore(script, start)
		for _, o := range script[start:end] {
			body.WriteString(string(o.kind) + o.line)
			if o.kind != '+' {
				oldLen++
				if oldStart == 0 {
					oldStart = o.oldN
				}
			}
			if o.kind != '-' {
				newLen++
				if newStart == 0 {
					newStart = o.newN
				}
			}
		}
		if oldStart == 0 {
			oldStart = oldLine
		}
		if newStart == 0 {
			newStart = newLine
		}
		out = append(out, fmt.Sprintf("@@ -%d,%d +%d,%d @@\n", oldStart, oldLen, newStart, newLen)+body.String())
		i = end
	}
	return out
}

// lineBefore is the line on each side just before script[at] (0 at the
// top), the start unified diff names for an empty side of a hunk.
func lineBefore(script []op, at int) (oldN, newN int) {
	for _, o := range script[:at] {
		if o.oldN > 0 {
			oldN = o.oldN
		}
		if o.newN > 0 {
			newN = o.newN
		}
	}
	return oldN, newN
}
