package agentfile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// Unfinished-construct kinds: what the scanner abandoned when the text
// ended inside it.
const (
	UnfinishedFrontmatter      = "frontmatter"
	UnfinishedFrontmatterEntry = "frontmatter entry"
	UnfinishedHeading          = "Examples heading"
	UnfinishedBlockOpener      = "Examples block opener"
	UnfinishedBlock            = "Examples block"
	UnfinishedExample          = "example"
	UnfinishedCharacter        = "character"
)

// UnfinishedConstruct is a construct the text ends inside: the scanner
// started it and the end of the text cut it off. Its own checks are
// deferred until it is complete; constructs complete before it are checked
// as usual.
type UnfinishedConstruct struct {
	// File is the examples file's base name for a construct in it.
	File  string `json:"file,omitempty"`
	Kind  string `json:"kind"`
	Range Range  `json:"range"`
}

// MaxInputBytes bounds an example input, and ad-hoc Run input elsewhere.
const MaxInputBytes = 16 << 10

// MaxTools bounds the names-only tool declaration.
const MaxTools = 32

const examplesHeading = "## Examples"

// parser holds the state of one Parse call; it is never shared.
type parser struct {
	name string
	// sibling is set when the examples live in NAME.agent.examples.yaml:
	// the instructions are then the whole body, and an Examples section
	// in the agent file is refused (KMX2012).
	sibling bool
	// examplesName is the sibling examples file's base name.
	examplesName string
	src          *source
	agent        *Agent
	diags        []Diagnostic
	unfinished   []UnfinishedConstruct
	// credentials are the raw-text credential findings, so that a decoded
	// YAML value covering the same bytes is not reported twice.
	credentials []secrets.Finding
	// declared holds the frontmatter tool names; toolsKnown is false when
	// the declaration itself is broken, so tool references are not checked
	// against a list the author has not managed to write yet.
	declared   map[string]bool
	toolsKnown bool
	ids        map[string]int
	regexps    map[string]error
	// exampleIDs parallels agent.Examples: where each valid id is, for
	// the duplicate check that runs once every example is read.
	exampleIDs []idSite
	// perEntry makes every list item of the Examples block decode on its
	// own, memo or not; tests compare that with the whole-block decode.
	perEntry bool
	// wholeBlock makes the pure Parse decode the Examples block in one
	// piece, as it did before it decoded by chunks; chunkBytes, when
	// positive, replaces the default chunk size. Tests set them to hold
	// the ways of decoding together.
	wholeBlock bool
	chunkBytes int
	// chunks counts the chunks the pure Parse decoded the Examples block
	// in (0: it decoded the block in one piece).
	chunks int
	// memo, when set, holds the checked examples of the previous parses
	// by their exact text (see Parser); nil for the pure Parse.
	memo *memo
	// noMemo is set while checking an entry whose outcome depends on more
	// than its own text: a decoded credential shape (weighed against the
	// raw findings of the whole file) or a repeated key (its message names
	// an absolute line). Such an entry is re-checked on every parse.
	noMemo bool
	// slab backs the examples replayed from the memo.
	slab slab
}

// Parse reads one agent file. name is the file name or path and is used
// only for the agent ID (its base name without ".agent.md", see
// IDFromFileName); an empty name gives an empty ID and no KMX1007. Parse
// is a pure function of its arguments and keeps nothing between calls (an
// editor re-parsing one document uses a Parser instead).
//
// The Markdown body is read this way: the instructions are the text between
// the frontmatter and the "## Examples" heading (outside code fences), with
// leading blank lines and trailing white space removed and everything else
// kept byte for byte. The Examples section runs from that heading to the end
// of the file and holds exactly one ```yaml (or ```yml) fence; prose around
// the fence is allowed and ignored.
func Parse(name string, src []byte) Result {
	return newParser(name, src).parse()
}

func newParser(name string, src []byte) *parser {
	sum := sha256.Sum256(src)
	return &parser{
		src:        newSource(string(src)),
		name:       name,
		agent:      &Agent{ID: defaultID(name), Revision: hex.EncodeToString(sum[:])},
		declared:   map[string]bool{},
		toolsKnown: true,
		ids:        map[string]int{},
	}
}

func (p *parser) parse() Result {
	p.checkUTF8()
	p.scanCredentials()
	p.checkFileID(p.name)
	if body := p.frontmatter(); body >= 0 {
		p.body(body)
	}
	p.checkIDs()
	p.checkWorkspaces()
	return p.result()
}

func defaultID(name string) string {
	if name == "" {
		return ""
	}
	id, _ := IDFromFileName(name)
	return id
}

func (p *parser) result() Result {
	sort.SliceStable(p.diags, func(i, j int) bool {
		a, b := p.diags[i].Range.Start.Offset, p.diags[j].Range.Start.Offset
		if a != b {
			return a < b
		}
		return p.diags[i].Code < p.diags[j].Code
	})
	state := Valid
	if len(p.unfinished) > 0 {
		state = Unfinished
	}
	for _, d := range p.diags {
		if d.Severity == SeverityError {
			state = Invalid
			break
		}
	}
	return Result{Agent: p.agent, Diagnostics: p.diags, State: state, Unfinished: p.unfinished}
}

func (p *parser) report(r Range, sev Severity, code, msg string) {
	p.diags = append(p.diags, Diagnostic{Range: r, Severity: sev, Code: code, Message: msg})
}

func (p *parser) errorf(r Range, code, msg string) {
	p.report(r, SeverityError, code, msg)
}

// abandon records a construct the end of the text cut, with the
// Information diagnostic that tells the author what is still missing.
func (p *parser) abandon(kind string, r Range, what string) {
	p.unfinished = append(p.unfinished, UnfinishedConstruct{Kind: kind, Range: r})
	p.report(r, SeverityInformation, CodeUnfinished, "still being written: "+what)
}

// checkUTF8 reports, at the first byte that is not UTF-8, a file that is
// not UTF-8 text (a binary file, another encoding): an error, so no run
// sends it (a model request carries UTF-8 text only). The rest is parsed as
// usual, so no other error is hidden behind it.
func (p *parser) checkUTF8() {
	t := p.src.text
	if utf8.ValidString(t) {
		return
	}
	for i := 0; i < len(t); {
		r, n := utf8.DecodeRuneInString(t[i:])
		if r == utf8.RuneError && n == 1 {
			if !utf8.FullRuneInString(t[i:]) {
				// A character the end of the text cuts: a prefix of a
				// UTF-8 file, not another encoding.
				p.abandon(UnfinishedCharacter, p.src.rng(i, len(t)), "the last character is cut off")
				return
			}
			p.errorf(p.src.rng(i, i+1), CodeNotUTF8, fmt.Sprintf("the file is not UTF-8 text (byte 0x%02X here): save it as UTF-8", t[i]))
			return
		}
		i += n
	}
}

// scanCredentials runs the shape scan once over the raw bytes, comments
// included.
func (p *parser) scanCredentials() {
	p.credentials = secrets.Scan(p.src.text)
	for _, f := range p.credentials {
		p.errorf(p.src.rng(f.Start, f.End), CodeCredential,
			secrets.WithArticle(f.Shape)+" is in the file: remove it (and rotate it), and refer to credentials only by environment variable name")
	}
}

// line is one line of the text: [start, end) without the line break, next
// is the start of the following line and nl says whether a break ended it.
type line struct {
	start, end, next int
	nl               bool
}

func (p *parser) lineAt(off int) line {
	t := p.src.text
	i := strings.IndexByte(t[off:], '\n')
	if i < 0 {
		return line{start: off, end: len(t), next: len(t)}
	}
	end := off + i
	if end > off && t[end-1] == '\r' {
		end--
	}
	return line{start: off, end: end, next: off + i + 1, nl: true}
}

func (p *parser) lineText(l line) string { return p.src.text[l.start:l.end] }

// frontmatter reads the optional frontmatter and returns where the body
// starts, or -1 when the text ends inside the frontmatter.
func (p *parser) frontmatter() int {
	t := p.src.text
	if t == "" {
		return 0
	}
	first := p.lineAt(0)
	opener := strings.TrimRight(p.lineText(first), " \t")
	if !first.nl && opener != "" && len(opener) <= 3 && strings.Trim(opener, "-") == "" {
		p.abandon(UnfinishedFrontmatter, p.src.rng(0, len(t)), "finish the `---` line that opens the frontmatter, then close it with another `---` line")
		return -1
	}
	if opener != "---" {
		return 0
	}
	for off := first.next; off < len(t); {
		l := p.lineAt(off)
		if strings.TrimRight(p.lineText(l), " \t") == "---" {
			p.checkFrontmatter(first.next, l.start)
			return l.next
		}
		off = l.next
	}
	p.abandon(UnfinishedFrontmatter, p.src.rng(0, len(t)), "close the frontmatter with a `---` line")
	// Entries start at column 0 (the first significant line starts one
	// whatever it looks like); all but the last are complete and checked.
	// A line holding only a tag or anchor belongs to the node after it.
	last, afterProps := -1, false
	for _, start := range blockLines(t[first.next:], first.next) {
		s := p.lineText(p.lineAt(start))
		trimmed := strings.TrimSpace(s)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		if !afterProps && (last < 0 || !strings.ContainsRune(" \t-", rune(s[0]))) {
			last = start
		}
		afterProps = propertiesOnly(trimmed)
	}
	if last < 0 {
		p.checkFrontmatter(first.next, len(t))
		return -1
	}
	p.checkFrontmatter(first.next, last)
	p.abandon(UnfinishedFrontmatterEntry, p.src.rng(last, len(t)), "this frontmatter entry is checked once the next key starts or the frontmatter closes")
	return -1
}

// body finds the instructions and the Examples section.
func (p *parser) body(start int) {
	t := p.src.text
	var fence fenceState
	heading := -1
	var headingLine line
	for off := start; off < len(t); {
		l := p.lineAt(off)
		s := p.lineText(l)
		switch {
		case fence.open:
			if fence.closes(s) {
				fence.open = false
			}
		case isExamplesHeading(s):
			heading, headingLine = l.start, l
		default:
			if f, ok := parseFenceOpener(s); ok {
				fence = f
			} else if !l.nl && s != "" && strings.HasPrefix(examplesHeading, s) {
				p.abandon(UnfinishedHeading, p.src.lineRange(p.src.lineOf(l.start)), "finish the `## Examples` heading")
			}
		}
		if heading >= 0 {
			break
		}
		off = l.next
	}
	if p.sibling {
		// Byte for byte what VS Code sends: the whole body.
		p.agent.Instructions = strings.Clone(t[start:])
		p.agent.InstructionsRange = p.src.rng(start, len(t))
		if heading >= 0 {
			p.errorf(p.src.rng(headingLine.start, headingLine.end), CodeExamplesInBothHomes,
				"the examples live in "+quote(p.siblingName())+", so this file's whole body is the agent's instructions: move these examples into that file and remove this section, or delete that file to keep them here")
		}
		return
	}
	end := len(t)
	if heading >= 0 {
		end = heading
	}
	p.instructions(start, end)
	if heading < 0 {
		if len(p.unfinished) == 0 {
			p.report(p.src.lineRange(0), SeverityInformation, CodeNoExamples,
				"no `## Examples` heading, so there is nothing to test: add `## Examples` with a ```yaml list of examples")
		}
		return
	}
	hr := p.src.rng(headingLine.start, headingLine.end)
	p.agent.ExamplesHeading = &hr
	p.examplesSection(headingLine)
}

func isExamplesHeading(s string) bool {
	rest, ok := strings.CutPrefix(s, "##")
	if !ok || rest == "" || rest[0] != ' ' && rest[0] != '\t' {
		return false
	}
	rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " \t"), "Examples")
	return ok && strings.Trim(rest, " \t#") == ""
}

// instructions keeps the body text between start and end, without leading
// blank lines and trailing white space.
func (p *parser) instructions(start, end int) {
	t := p.src.text
	for off := start; off < end; {
		l := p.lineAt(off)
		if l.next > end || strings.TrimSpace(p.lineText(l)) != "" {
			break
		}
		start, off = l.next, l.next
	}
	stop := start + len(strings.TrimRight(t[start:end], " \t\r\n"))
	// A copy: a slice of the text would keep the whole file alive for as
	// long as the Agent is (a kmx test run), examples and all.
	p.agent.Instructions = strings.Clone(t[start:stop])
	p.agent.InstructionsRange = p.src.rng(start, stop)
}

// fenceState is an open Markdown code fence: its character and length.
type fenceState struct {
	open bool
	ch   byte
	n    int
	info string
}

// parseFenceOpener recognises a CommonMark fence opener: up to three spaces,
// then three or more backticks or tildes, then an info string.
func parseFenceOpener(s string) (fenceState, bool) {
	indent := len(s) - len(strings.TrimLeft(s, " "))
	if indent > 3 {
		return fenceState{}, false
	}
	s = s[indent:]
	if s == "" || s[0] != '`' && s[0] != '~' {
		return fenceState{}, false
	}
	n := len(s) - len(strings.TrimLeft(s, s[:1]))
	info := strings.TrimSpace(s[n:])
	if n < 3 || s[0] == '`' && strings.IndexByte(info, '`') >= 0 {
		return fenceState{}, false
	}
	return fenceState{open: true, ch: s[0], n: n, info: info}, true
}

func (f fenceState) closes(s string) bool {
	s = strings.TrimLeft(s, " ")
	n := len(s) - len(strings.TrimLeft(s, string(f.ch)))
	return n >= f.n && strings.TrimSpace(s[n:]) == ""
}

// isYAMLInfo reports whether a fence's info string names YAML.
func isYAMLInfo(info string) bool {
	word, _, _ := strings.Cut(info, " ")
	word = strings.ToLower(word)
	return word == "yaml" || word == "yml"
}

// isBlockOpenerPrefix reports whether s could still grow into the ```yaml
// line that opens the Examples block.
func isBlockOpenerPrefix(s string) bool {
	s = strings.TrimLeft(s, " ")
	if s == "" || s[0] != '`' && s[0] != '~' {
		return false
	}
	rest := strings.ToLower(strings.TrimLeft(strings.TrimLeft(s, s[:1]), " \t"))
	return strings.HasPrefix("yaml", rest) || strings.HasPrefix("yml", rest)
}

// examplesSection reads the one yaml fence under the Examples heading.
func (p *parser) examplesSection(heading line) {
	t := p.src.text
	var fence fenceState
	var opener line
	isYAML, seen, closed := false, false, false
	contentStart, contentEnd := -1, len(t)
	for off := heading.next; off < len(t); {
		l := p.lineAt(off)
		s := p.lineText(l)
		off = l.next
		if fence.open {
			if fence.closes(s) {
				fence.open = false
				if isYAML && contentStart >= 0 && !closed {
					contentEnd, closed = l.start, true
				}
			} else if !l.nl && isYAML && !closed && isCloserPrefix(s, fence) {
				contentEnd = l.start // the closing fence is being typed
			}
			continue
		}
		if !l.nl && isBlockOpenerPrefix(s) {
			p.abandon(UnfinishedBlockOpener, p.src.rng(l.start, l.end), "finish the ```yaml line that opens the Examples block")
			break
		}
		f, ok := parseFenceOpener(s)
		if !ok {
			continue
		}
		if !l.nl && f.ch == '`' {
			// One more backtick on this line would make it prose, not a
			// fence, so the line decides nothing yet.
			p.abandon(UnfinishedBlockOpener, p.src.rng(l.start, l.end), "finish the line that opens a fenced block")
			break
		}
		fence = f
		r := p.src.rng(l.start, l.end)
		switch {
		case seen:
			p.errorf(r, CodeExtraBlock, "a second fenced block under `## Examples`: keep exactly one ```yaml block and move its examples into it")
		case isYAMLInfo(f.info):
			isYAML, opener, contentStart = true, l, l.next
		case f.info == "":
			p.errorf(r, CodeExamplesNotYAML, "the Examples block has no language: open it with ```yaml")
		default:
			p.errorf(r, CodeExamplesNotYAML, "the Examples block is fenced as "+quote(strings.Fields(f.info)[0])+": open it with ```yaml")
		}
		seen = true
	}
	switch {
	case !seen:
		if len(p.unfinished) == 0 {
			p.abandon(UnfinishedBlock, p.src.rng(heading.start, heading.end), "add a ```yaml block of examples under `## Examples`")
		}
	case isYAML && closed:
		p.examples(opener, contentStart, contentEnd)
	case isYAML:
		p.abandon(UnfinishedBlock, p.src.rng(opener.start, len(t)), "close the Examples block with a "+strings.Repeat(string(fence.ch), fence.n)+" line")
		p.openExamples(opener, contentStart, contentEnd)
	}
}

func isCloserPrefix(s string, f fenceState) bool {
	s = strings.TrimLeft(s, " ")
	return s != "" && strings.Trim(s, string(f.ch)) == "" && len(s) < f.n
}

// openExamples reads a yaml fence the text ends inside. Items at the list's
// indentation are complete once a later sibling has started; the last one
// is abandoned and its checks wait.
func (p *parser) openExamples(opener line, start, end int) {
	t := p.src.text
	indent, first := -1, line{}
	last, items := -1, 0
	for _, off := range blockLines(t[start:end], start) {
		l := p.lineAt(off)
		s := p.lineText(l)
		trimmed := strings.TrimLeft(s, " ")
		if strings.TrimSpace(trimmed) == "" || trimmed[0] == '#' {
			continue
		}
		if indent < 0 {
			if strings.TrimSpace(trimmed) == "---" || propertiesOnly(strings.TrimSpace(trimmed)) {
				continue // a document marker, or a tag or anchor of the list
			}
			indent, first = len(s)-len(trimmed), l
		}
		if len(s)-len(trimmed) == indent && isItemStart(trimmed) {
			last = l.start
			items++
		}
	}
	switch {
	case indent < 0:
		return // only comments so far
	case last >= 0:
		if items > 1 { // before the first item there is nothing complete
			p.examplesComplete(opener, start, last, false)
		}
		p.abandon(UnfinishedExample, p.src.rng(last, len(t)), "this example is checked once the next example starts or the block closes")
	case !first.nl || strings.HasPrefix(strings.TrimLeft(p.lineText(first), " "), "["):
		p.abandon(UnfinishedExample, p.src.rng(first.start, len(t)), "finish the list of examples and close the block")
	default:
		p.errorf(p.src.rng(first.start, first.end), CodeExamplesNotList, "the Examples block must be a YAML list: start each example with `- id:`")
	}
}

// propertiesOnly reports whether a line holds only node properties (tags
// and anchors), which apply to the node on the following line.
func propertiesOnly(trimmed string) bool {
	fields := strings.Fields(trimmed)
	for _, f := range fields {
		if f[0] != '!' && f[0] != '&' {
			return false
		}
	}
	return len(fields) > 0
}

func isItemStart(s string) bool {
	return s == "-" || strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "-\t")
}

// quote shows a short authored value in a message, unless it is shaped like
// a credential: messages never echo one.
func quote(s string) string {
	if len(secrets.Scan(s)) > 0 {
		return "(a credential-shaped value)"
	}
	if len(s) > 40 {
		cut := 40
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return "`" + s + "`"
}
