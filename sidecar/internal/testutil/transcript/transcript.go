// Package transcript runs transcript tests: a txtar archive whose files are
// written to a fresh folder and whose comment is a session as a user sees
// it, each command followed by exactly what it printed and how it ended.
// The CLI's (`$ kmx …`, `[exit N]`) and the MCP server's (`> Tool {…}`,
// `[isError B]`) transcripts share this parser, the normalising of what
// must vary between runs, and the -update rewrite.
//
// A transcript's comment:
//
//	# a comment (only between commands)
//	PREFIX COMMAND          one command (PREFIX is "$" or ">")
//	OUTPUT...               what it printed
//	[STATUS]                how it ended, which closes the block
package transcript

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// Block is one command of a transcript with the comments before it.
type Block struct {
	Comments []string // comment and blank lines before the command
	Command  string   // the line after the prefix
	Output   string   // what it printed, each line ending in \n
	Status   string   // the text inside the closing [ ]
}

var statusLine = regexp.MustCompile(`^\[([a-zA-Z]+(?: [^\]]*)?)\]$`)

// Parse reads a transcript's comment: blocks, then the comment lines after
// the last one.
func Parse(text, prefix string) ([]Block, []string, error) {
	var blocks []Block
	var pending []string
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	lead := prefix + " "
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if !strings.HasPrefix(line, lead) {
			if line != "" && !strings.HasPrefix(line, "#") {
				return nil, nil, fmt.Errorf("line %d: %q is neither a comment, a blank line nor a command (%s ...)", i+1, line, prefix)
			}
			pending = append(pending, line)
			continue
		}
		b := Block{Comments: pending, Command: strings.TrimPrefix(line, lead)}
		pending = nil
		var out []string
		closed := false
		for i++; i < len(lines); i++ {
			if m := statusLine.FindStringSubmatch(lines[i]); m != nil {
				b.Status = m[1]
				closed = true
				break
			}
			out = append(out, lines[i])
		}
		if !closed {
			return nil, nil, fmt.Errorf("command %q has no [STATUS] line after its output", b.Command)
		}
		if len(out) > 0 {
			b.Output = strings.Join(out, "\n") + "\n"
		}
		blocks = append(blocks, b)
	}
	return blocks, pending, nil
}

// Format writes blocks and trailing comment lines back as a comment.
func Format(blocks []Block, trailing []string, prefix string) string {
	var b strings.Builder
	for _, bl := range blocks {
		for _, c := range bl.Comments {
			b.WriteString(c + "\n")
		}
		b.WriteString(prefix + " " + bl.Command + "\n")
		b.WriteString(bl.Output)
		fmt.Fprintf(&b, "[%s]\n", bl.Status)
	}
	for _, c := range trailing {
		b.WriteString(c + "\n")
	}
	return b.String()
}

// Runner runs one command of a transcript and returns its output (already
// normalised) and status.
type Runner func(command string) (output, status string, err error)

// Run replays the transcript at path: writes its files to a fresh folder
// (returned to setup before the first command), runs each command, and
// compares. With update it rewrites the file from what the commands print
// now instead. how names the command that updates, for the failure message.
func Run(t *testing.T, path, prefix string, update bool, how string, setup func(work string) Runner) {
	t.Helper()
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, trailing, err := Parse(string(ar.Comment), prefix)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	work := t.TempDir()
	for _, f := range ar.Files {
		p := filepath.Join(work, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := setup(work)
	changed := false
	for i := range blocks {
		b := &blocks[i]
		out, status, err := run(b.Command)
		if err != nil {
			t.Fatalf("%s: %s %s: %v", path, prefix, b.Command, err)
		}
		if update {
			b.Output, b.Status = out, status
			continue
		}
		if out != b.Output || status != b.Status {
			changed = true
			t.Errorf("%s %s\n--- got [%s] ---\n%s--- want [%s] ---\n%s", prefix, b.Command, status, out, b.Status, b.Output)
		}
	}
	if update {
		ar.Comment = []byte(Format(blocks, trailing, prefix))
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if changed {
		t.Logf("if the new output is right, run %s and review the diff", how)
	}
}

// Normalizer replaces what varies between runs, and only that: the named
// paths by their names, run IDs by $RUN1, $RUN2, … in the order they
// first appear, durations by D, sizes by SIZE, JSON numbers and times
// (and the text's times, "2026-01-02 03:04:05 UTC") that vary by N and T, and the kmx version by V.
type Normalizer struct {
	// Vars maps a name ($WORK) to its value, for Expand and Normalize.
	Vars map[string]string
	runs []string
}

var (
	runID    = regexp.MustCompile(`\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{8}`)
	duration = regexp.MustCompile(`\b\d+(\.\d+)? ?(ms|µs|s)\b`)
	size     = regexp.MustCompile(`\b\d+(\.\d+)? (KiB|MiB|GiB|B|bytes)\b`)
	jsonNums = regexp.MustCompile(`"(durationMs|durationUs|sizeBytes|bytes|size)": ?[0-9.e+-]+`)
	times    = regexp.MustCompile(`"(created|started|finished|updated|time)": ?"[^"]+"`)
	// textTime is a time as the text output prints one (kmx journal inspect).
	textTime = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC\b`)
	version  = regexp.MustCompile(`"kmxVersion": ?"[^"]+"`)
)

// Expand replaces the names of Vars and $RUNn in a command's argument.
func (n *Normalizer) Expand(w string) string {
	for i := len(n.runs); i >= 1; i-- { // $RUN10 before $RUN1
		w = strings.ReplaceAll(w, "$RUN"+strconv.Itoa(i), n.runs[i-1])
	}
	for k, v := range n.Vars {
		w = strings.ReplaceAll(w, k, v)
	}
	return w
}

// Normalize replaces what varies between runs in s.
func (n *Normalizer) Normalize(s string) string {
	s = runID.ReplaceAllStringFunc(s, func(id string) string {
		for i, r := range n.runs {
			if r == id {
				return "$RUN" + strconv.Itoa(i+1)
			}
		}
		n.runs = append(n.runs, id)
		return "$RUN" + strconv.Itoa(len(n.runs))
	})
	// The longest value first: $KMX_HOME and $WORK may share a prefix.
	keys := make([]string, 0, len(n.Vars))
	for k := range n.Vars {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if len(n.Vars[keys[j]]) > len(n.Vars[keys[i]]) || (len(n.Vars[keys[j]]) == len(n.Vars[keys[i]]) && keys[j] < keys[i]) {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	for _, k := range keys {
		if n.Vars[k] != "" {
			s = strings.ReplaceAll(s, n.Vars[k], k)
		}
	}
	s = jsonNums.ReplaceAllStringFunc(s, func(m string) string { return m[:strings.Index(m, ":")] + `: N` })
	s = times.ReplaceAllStringFunc(s, func(m string) string { return m[:strings.Index(m, ":")] + `: "T"` })
	s = textTime.ReplaceAllString(s, "T")
	s = version.ReplaceAllString(s, `"kmxVersion": "V"`)
	s = size.ReplaceAllString(s, "SIZE")
	return duration.ReplaceAllString(s, "D")
}
