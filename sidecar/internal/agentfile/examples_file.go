package agentfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"gopkg.in/yaml.v3"
)

// ExamplesFileSuffix ends the name of an agent's sibling examples file:
// NAME.agent.examples.yaml beside NAME.agent.md holds the same YAML list
// an Examples block holds, so the agent file stays byte for byte what VS
// Code runs.
const ExamplesFileSuffix = ".agent.examples.yaml"

const agentFileSuffix = ".agent.md"

// IsExamplesFile reports whether path names a sibling examples file.
func IsExamplesFile(path string) bool {
	return strings.HasSuffix(path, ExamplesFileSuffix) && len(baseName(path)) > len(ExamplesFileSuffix)
}

// SiblingExamplesPath returns the examples file beside an agent file
// (NAME.agent.md → NAME.agent.examples.yaml), or "" when path is not an
// agent file.
func SiblingExamplesPath(agentPath string) string {
	stem, ok := strings.CutSuffix(agentPath, agentFileSuffix)
	if !ok || baseName(stem) == "" {
		return ""
	}
	return stem + ExamplesFileSuffix
}

// AgentPathOf returns the agent file an examples file belongs to
// (NAME.agent.examples.yaml → NAME.agent.md), or "" when path is not an
// examples file.
func AgentPathOf(examplesPath string) string {
	if !IsExamplesFile(examplesPath) {
		return ""
	}
	return strings.TrimSuffix(examplesPath, ExamplesFileSuffix) + agentFileSuffix
}

func baseName(path string) string {
	return path[strings.LastIndexAny(path, `/\`)+1:]
}

// PairRevision is the revision of an agent whose examples live beside it:
// the SHA-256 of the two files' own SHA-256 sums, so a change to either
// file changes it and no pair of files can pose as another.
func PairRevision(agentSrc, examplesSrc []byte) string {
	a, e := sha256.Sum256(agentSrc), sha256.Sum256(examplesSrc)
	sum := sha256.Sum256(append(append([]byte("kmx pair\x00"), a[:]...), e[:]...))
	return hex.EncodeToString(sum[:])
}

// ParsePair reads an agent file whose examples live in its sibling
// examples file. The agent's instructions are then its whole body, byte
// for byte what VS Code sends; an Examples section in the agent file as
// well is refused (KMX2012). The examples file is read with the grammar
// of an Examples block: the same codes, the same credential scan (over the
// whole file, comments included), and the same line between unfinished
// and invalid, the end of the file playing the part of the block's
// closing fence (see examplesFile). Diagnostics in the examples file carry
// its base name in File. Like Parse, ParsePair is a pure function of its
// arguments.
//
// The examples file is read as saved: complete, so YAML that does not
// parse is an Error where it stops parsing, never "still being written".
// ParsePairTyping reads an editor buffer with unsaved changes.
func ParsePair(agentName string, agentSrc []byte, examplesName string, examplesSrc []byte) Result {
	return parsePairText(agentName, agentSrc, examplesName, examplesSrc, false)
}

// ParsePairTyping is ParsePair for an examples file being typed (an
// editor buffer with unsaved changes): YAML cut at its end may be the
// last example still being written, an Information, not an Error.
func ParsePairTyping(agentName string, agentSrc []byte, examplesName string, examplesSrc []byte) Result {
	return parsePairText(agentName, agentSrc, examplesName, examplesSrc, true)
}

func parsePairText(agentName string, agentSrc []byte, examplesName string, examplesSrc []byte, typing bool) Result {
	p := newParser(agentName, agentSrc)
	p.sibling = true
	p.examplesName = baseName(examplesName)
	p.scanCredentials()
	p.checkFileID(p.name)
	if body := p.frontmatter(); body >= 0 {
		p.body(body)
	}
	p.agent.Revision = PairRevision(agentSrc, examplesSrc)
	p.agent.ExamplesFile = p.examplesName

	ex := p.examplesFile(examplesSrc, typing)
	p.agent.Examples = ex.agent.Examples
	p.agent.Workspace, p.agent.WorkspaceRange = ex.agent.Workspace, ex.agent.WorkspaceRange
	for _, d := range ex.diags {
		d.File = p.examplesName
		p.diags = append(p.diags, d)
	}
	for _, u := range ex.unfinished {
		u.File = p.examplesName
		p.unfinished = append(p.unfinished, u)
	}
	return p.result()
}

func (p *parser) siblingName() string {
	if p.examplesName != "" {
		return p.examplesName
	}
	return "the examples file"
}

// examplesFile checks the examples file's text. The file has no closing
// fence because it needs none: it is a whole YAML document, so once it
// parses as YAML it is finished, and it is read like an Examples block
// whose fence is closed (a wrong last example is an Error, as it would be
// above a closing fence). A saved file (typing false) is finished too,
// whether it parses or not: YAML that does not is an Error on the line
// where it stops parsing. Only in a buffer being typed can text that does
// not parse as YAML yet be a node cut at the end of the file: then the end
// is treated as a fence still open, the examples before the last are
// checked as complete, and the last one is still being written unless an
// earlier one is invalid; its message says what the whole reading found.
// A file with no example yet is still being written.
func (p *parser) examplesFile(src []byte, typing bool) *parser {
	whole := p.examplesParser(src)
	whole.examplesComplete(whole.lineAt(0), 0, len(src), true)
	whole.checkIDs()
	whole.checkWorkspaces()
	if !whole.hasErrors() && len(whole.agent.Examples) > 0 || !whole.hasCode(CodeYAMLSyntax) && !noItems(src) {
		return whole
	}
	if !typing && whole.hasCode(CodeYAMLSyntax) {
		return whole
	}
	open := p.examplesParser(src)
	open.openExamples(open.lineAt(0), 0, len(src))
	open.checkIDs()
	open.checkWorkspaces()
	if len(open.unfinished) == 0 && !open.hasErrors() {
		open.abandon(UnfinishedExample, open.src.rng(0, len(src)), "add the first example, starting with `- id:`")
		return open
	}
	why := ""
	for _, d := range whole.diags {
		if d.Severity == SeverityError && !open.hasErrors() {
			why = "; as it stands: " + d.Message
			break
		}
	}
	for i := range open.diags {
		if open.diags[i].Code == CodeUnfinished {
			open.diags[i].Message = "still being written: this example is checked once its YAML is complete" + why
		}
	}
	return open
}

// noItems reports an examples file that holds no list item yet (only
// comments, blank lines or an empty list): still being written.
func noItems(src []byte) bool {
	root, err := decodeYAML(string(src))
	return err == nil && (isNull(root) || root.Kind == yaml.SequenceNode && len(root.Content) == 0)
}

func (p *parser) hasCode(code string) bool {
	for _, d := range p.diags {
		if d.Code == code {
			return true
		}
	}
	return false
}

// examplesParser is a parser for the examples file that checks tool
// references against this agent's declared tools.
func (p *parser) examplesParser(src []byte) *parser {
	e := newParser("", src)
	e.declared, e.toolsKnown = p.declared, p.toolsKnown
	e.scanCredentials()
	return e
}

func (p *parser) hasErrors() bool {
	for _, d := range p.diags {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// ParseFile parses path, either file of an agent: the agent file (with its
// sibling examples file when read finds one) or the examples file (with
// the agent file read names). src is path's own text; read supplies the
// other file and answers an error wrapping fs.ErrNotExist when it is
// absent. agentPath is the agent file's path, the one journals, failures
// and reports are filed under. ParseFile itself touches no filesystem.
func ParseFile(path string, src []byte, read func(string) ([]byte, error)) (res Result, agentPath string, err error) {
	return ParseFileTyping(path, src, read, nil)
}

// ParseFileTyping is ParseFile in an editor: typing reports whether the
// text of the examples file at a path is a buffer with unsaved changes
// (ParsePairTyping); nil, or false, reads it as saved, complete.
func ParseFileTyping(path string, src []byte, read func(string) ([]byte, error), typing func(path string) bool) (res Result, agentPath string, err error) {
	pair := func(agentPath string, agentSrc []byte, examplesPath string, examplesSrc []byte) Result {
		return parsePairText(agentPath, agentSrc, examplesPath, examplesSrc, typing != nil && typing(examplesPath))
	}
	if examples := AgentPathOf(path); examples != "" {
		agentPath = examples
		agentSrc, err := read(agentPath)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return Result{}, agentPath, fmt.Errorf("%s holds examples for %s, which does not exist: create the agent file beside it, or rename this file", baseName(path), baseName(agentPath))
			}
			return Result{}, agentPath, fmt.Errorf("reading the agent file %s: %w", baseName(agentPath), err)
		}
		return pair(agentPath, agentSrc, path, src), agentPath, nil
	}
	sibling := SiblingExamplesPath(path)
	if sibling == "" {
		return Parse(path, src), path, nil
	}
	examplesSrc, err := read(sibling)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Parse(path, src), path, nil
	case err != nil:
		return Result{}, path, fmt.Errorf("reading the examples file %s: %w", baseName(sibling), err)
	}
	return pair(path, src, sibling, examplesSrc), path, nil
}
