package agentfile

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// examples reads a closed yaml fence.
func (p *parser) examples(opener line, start, end int) {
	p.examplesComplete(opener, start, end, true)
}

// examplesComplete checks the complete examples in [start, end). required
// says the text is the whole block, so an empty one is refused; for an
// open block it is the part before the example being typed.
func (p *parser) examplesComplete(opener line, start, end int, required bool) {
	// Only a Parser (or a test) splits the block into entries: the pure
	// Parse decodes it in one piece, which is fastest when nothing is known.
	var entries []entry
	if p.memo != nil || p.perEntry {
		entries, _ = p.splitEntries(start, end)
	} else if !p.wholeBlock {
		if chunked, ok := p.splitEntries(start, end); ok && p.examplesByChunk(chunked) {
			return
		}
	}
	if entries != nil {
		p.memo.begin(p.toolContext())
		if p.examplesPerEntry(entries, start, end) {
			p.memo.commit()
			return
		}
	}
	fr := fragment{start: start, end: end, baseLine: p.src.lineOf(start)}
	root, ok := p.parseYAML(fr)
	if !ok {
		return
	}
	if isNull(root) || root.Kind == yaml.SequenceNode && len(root.Content) == 0 {
		if required {
			p.errorf(p.src.rng(opener.start, opener.end), CodeExamplesNotList,
				"the Examples block is empty: add at least one example starting with `- id:`")
		}
		return
	}
	if root.Kind != yaml.SequenceNode {
		p.checkNodes(fr, root)
		p.errorf(p.src.lineRange(p.src.lineOf(p.nodeStart(fr, root))), CodeExamplesNotList,
			"the Examples block must be a YAML list: start each example with `- id:`")
		return
	}
	p.agent.Examples = append(make([]Example, 0, len(p.agent.Examples)+len(root.Content)), p.agent.Examples...)
	if entries != nil && p.itemsByEntry(fr, root.Content, entries) {
		p.memo.commit()
		return
	}
	p.checkNodes(fr, root)
	p.items(fr, root.Content, end)
}

// items checks the list items of one fragment; the last one ends at end.
func (p *parser) items(fr fragment, items []*yaml.Node, end int) {
	dashes := make([]int, len(items))
	for i, item := range items {
		dashes[i] = p.dashBefore(fr, item)
	}
	for i, item := range items {
		itemEnd := end
		if i+1 < len(dashes) {
			itemEnd = dashes[i+1]
		}
		itemEnd = dashes[i] + len(strings.TrimRight(p.src.text[dashes[i]:itemEnd], " \t\r\n"))
		p.example(fr, item, dashes[i], itemEnd)
	}
}

// dashBefore finds the "-" that opens a list item: yaml.v3 positions an
// item at its first key, after the dash and any white space.
func (p *parser) dashBefore(fr fragment, item *yaml.Node) int {
	t := p.src.text
	start := p.nodeStart(fr, item)
	for i := start - 1; i >= fr.start; i-- {
		switch t[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '-':
			return i
		}
		break
	}
	return start
}

func (p *parser) example(fr fragment, item *yaml.Node, dash, end int) {
	lineRange := p.src.rng(dash, p.src.lineEnd(p.src.lineOf(dash)))
	ex := Example{Range: lineRange, FullRange: p.src.rng(dash, end)}
	var site idSite
	if item.Kind != yaml.MappingNode {
		p.errorf(lineRange, CodeExampleNotMapping, "each example must be a mapping with `id:` and `input:`")
		p.agent.Examples = append(p.agent.Examples, ex)
		p.exampleIDs = append(p.exampleIDs, site)
		return
	}
	if len(item.Content) == 2 && item.Content[0].Value == "workspace" {
		// `- workspace: DIR` alone: the file's default (checkWorkspaces).
		ex.defaults = true
		ex.Workspace, ex.WorkspaceRange = p.workspace(fr, item.Content[0], item.Content[1])
		p.agent.Examples = append(p.agent.Examples, ex)
		p.exampleIDs = append(p.exampleIDs, site)
		return
	}
	hasID, hasInput := false, false
	var turnsKey, assertKey *yaml.Node
	for i := 0; i+1 < len(item.Content); i += 2 {
		k, v := item.Content[i], item.Content[i+1]
		switch k.Value {
		case "id":
			hasID = true
			id, ok := scalar(v)
			r := p.pairRange(fr, k, v)
			switch {
			case !ok || id == "":
				p.errorf(r, CodeMissingID, "`id` is empty: give the example a unique name")
			case !idPattern.MatchString(id):
				p.errorf(r, CodeBadID, "example id "+quote(id)+" is not allowed: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
			default:
				ex.ID = id
				site = idSite{id: id, r: r}
			}
		case "input":
			hasInput = true
			if in, ok := p.input(fr, k, v); ok {
				ex.Input = in
			}
		case "assert":
			assertKey = k
			ex.Assertions = p.assertions(fr, k, v)
		case "turns":
			turnsKey = k
			ex.Turns = p.turns(fr, k, v)
		case "tools":
			ex.Tools = p.recordings(fr, k, v)
		case "workspace":
			ex.Workspace, ex.WorkspaceRange = p.workspace(fr, k, v)
		default:
			p.errorf(p.nodeRange(fr, k), CodeUnknownExampleKey,
				"unknown example key "+quote(k.Value)+": an example has id, input (or turns), assert, tools and workspace")
		}
	}
	if !hasID {
		p.errorf(lineRange, CodeMissingID, "this example has no `id`: add `id:` with a unique name")
	}
	switch {
	case turnsKey != nil && hasInput:
		p.errorf(p.nodeRange(fr, turnsKey), CodeTurnsWithInput,
			"this example has both `input` and `turns`: keep `input` (and `assert`) for one message, or move the input into the first of `turns`")
		ex.Input = ""
	case turnsKey != nil && assertKey != nil:
		p.errorf(p.nodeRange(fr, assertKey), CodeTurnsWithInput,
			"`assert` beside `turns`: a multi-turn example's assertions belong to its turns; move them under the turn whose answer they check")
		ex.Assertions = nil
	case turnsKey == nil && !hasInput:
		p.errorf(lineRange, CodeMissingInput, "this example has no `input`: add `input:` with the user message to send (or `turns:` for a conversation)")
	}
	p.agent.Examples = append(p.agent.Examples, ex)
	p.exampleIDs = append(p.exampleIDs, site)
}

// input checks one user message (an example's or a turn's).
func (p *parser) input(fr fragment, k, v *yaml.Node) (string, bool) {
	in, ok := scalar(v)
	r := p.pairRange(fr, k, v)
	switch {
	case !ok || in == "":
		p.errorf(r, CodeMissingInput, "`input` is empty: write the user message to send")
	case len(in) > MaxInputBytes:
		p.errorf(r, CodeInputTooLarge, fmt.Sprintf("`input` is %d bytes: shorten it to at most %d bytes (16 KiB)", len(in), MaxInputBytes))
	default:
		return in, true
	}
	return "", false
}

// turns reads a multi-turn example's script: a list of `{input, assert}`.
// The result is never nil, so the example reads as multi-turn whatever is
// wrong with the list.
func (p *parser) turns(fr fragment, k, v *yaml.Node) []Turn {
	const shape = "`turns` must be a list of turns, each `- input: MESSAGE` with an optional `assert:` list"
	v = resolve(v)
	if v == nil || v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		p.errorf(p.pairRange(fr, k, v), CodeMalformedTurns, shape)
		return []Turn{}
	}
	if len(v.Content) > MaxTurns {
		p.errorf(p.nodeRange(fr, k), CodeMalformedTurns, fmt.Sprintf("`turns` has %d turns: split the conversation into examples of at most %d turns", len(v.Content), MaxTurns))
		return []Turn{}
	}
	out := make([]Turn, 0, len(v.Content))
	for n, item := range v.Content {
		item = resolve(item)
		r := p.nodeRange(fr, item)
		start := p.dashBefore(fr, item)
		t := Turn{Range: p.src.rng(start, max(start, min(p.src.lineEnd(p.src.lineOf(start)), fr.end)))}
		if item.Kind != yaml.MappingNode {
			p.errorf(r, CodeMalformedTurns, fmt.Sprintf("turn %d is not a mapping: %s", n+1, shape))
			out = append(out, t)
			continue
		}
		hasInput := false
		for i := 0; i+1 < len(item.Content); i += 2 {
			tk, tv := item.Content[i], item.Content[i+1]
			switch tk.Value {
			case "input":
				hasInput = true
				t.Input, _ = p.input(fr, tk, tv)
			case "assert":
				t.Assertions = p.assertions(fr, tk, tv)
			default:
				p.errorf(p.nodeRange(fr, tk), CodeMalformedTurns,
					"unknown turn key "+quote(tk.Value)+": a turn has input and assert (tools belong to the example and answer every turn)")
			}
		}
		if !hasInput {
			p.errorf(t.Range, CodeMissingInput, fmt.Sprintf("turn %d has no `input`: add `input:` with the user message to send", n+1))
		}
		out = append(out, t)
	}
	return out
}

// idSite is where an example's valid id was written; id is empty when the
// example has none.
type idSite struct {
	id string
	r  Range
}

// checkIDs reports repeated example ids, in example order, once every
// example is read. It runs over the whole list on every parse (never from
// a cache), because a duplicate depends on all the other examples.
func (p *parser) checkIDs() {
	for _, s := range p.exampleIDs {
		if s.id == "" {
			continue
		}
		if line, dup := p.ids[s.id]; dup {
			p.errorf(s.r, CodeDuplicateID, fmt.Sprintf("example id %s is already used on line %d: ids are unique in a file", quote(s.id), line))
		} else {
			p.ids[s.id] = s.r.Start.Line + 1
		}
	}
}

var assertionTypes = "contains, notContains, regex, llmJudge, toolCalled, toolNotCalled, toolCalledWith, toolOrder, toolCalls, noOtherTools, maxLatencyMs, maxTokens, fileContains, fileNotContains, fileMatches, fileUnchanged or filesChanged"

// workspace reads `workspace: DIR`: a clean relative folder path (checked
// again, on disk, before a run).
func (p *parser) workspace(fr fragment, k, v *yaml.Node) (string, Range) {
	r := p.pairRange(fr, k, v)
	s, ok := scalar(v)
	if !ok || resolve(v).Kind != yaml.ScalarNode {
		p.errorf(r, CodeBadWorkspace, "`workspace` must be one folder path, such as fixtures/app")
		return "", r
	}
	if err := checkWorkspaceDir(s); err != nil {
		p.errorf(r, CodeBadWorkspace, err.Error())
		return "", r
	}
	return s, r
}

// checkWorkspaces takes the file's default workspace (a first list item
// holding only `workspace:`) out of the examples, and refuses a default
// anywhere else and a file assertion in an example with no workspace. It
// runs over the whole list on every parse (never from a cache), as
// checkIDs does: both depend on the other items.
func (p *parser) checkWorkspaces() {
	if slices.ContainsFunc(p.agent.Examples, func(ex Example) bool { return ex.defaults }) {
		// A new slice: the memo may share the old one's array.
		var kept []Example
		for i, ex := range p.agent.Examples {
			if !ex.defaults {
				kept = append(kept, ex)
				continue
			}
			if i > 0 {
				p.errorf(ex.Range, CodeBadWorkspace, "a file-wide `- workspace: DIR` goes first in the list: move it above the first example, or give this example its own `id`, `input` and `workspace`")
				continue
			}
			p.agent.Workspace, p.agent.WorkspaceRange = ex.Workspace, ex.WorkspaceRange
		}
		p.agent.Examples = kept
	}
	for _, ex := range p.agent.Examples {
		// A `workspace:` that is written but invalid has its own KMX2020:
		// saying the example needs a workspace would only repeat it, wrongly.
		if p.agent.WorkspaceOf(ex) != "" || ex.WorkspaceRange != (Range{}) || p.agent.WorkspaceRange != (Range{}) {
			continue
		}
		for _, a := range ex.AllAssertions() {
			if a.Type.IsFileAssertion() {
				p.errorf(a.Range, CodeFileNoWorkspace, "`"+string(a.Type)+"` needs a workspace: give the example `workspace: DIR`, or the file a first item `- workspace: DIR`")
			}
		}
	}
}

// fileOperand reads `{path: P, KEY: TEXT}` (KEY is text or regex).
func (p *parser) fileOperand(fr fragment, tk, tv *yaml.Node, a *Assertion, key string) bool {
	v := resolve(tv)
	shape := "`" + tk.Value + "` needs `{path: FILE, " + key + ": ...}`"
	if v == nil || v.Kind != yaml.MappingNode {
		p.errorf(a.Range, CodeMalformedAssertion, shape)
		return false
	}
	hasPath, hasKey := false, false
	for i := 0; i+1 < len(v.Content); i += 2 {
		fk, fv := v.Content[i], v.Content[i+1]
		s, ok := scalar(fv)
		ok = ok && resolve(fv).Kind == yaml.ScalarNode && s != ""
		switch fk.Value {
		case "path":
			if !ok {
				p.errorf(p.pairRange(fr, fk, fv), CodeMalformedAssertion, "`path` must be one file path in the workspace, such as src/main.go")
				return false
			}
			if err := checkWorkspaceFile(s); err != nil {
				p.errorf(p.pairRange(fr, fk, fv), CodeMalformedAssertion, "`path` "+err.Error())
				return false
			}
			a.op().Path, hasPath = s, true
		case key:
			if !ok {
				p.errorf(p.pairRange(fr, fk, fv), CodeMalformedAssertion, "`"+key+"` must be non-empty text")
				return false
			}
			if key == "regex" {
				if err := p.compileRegex(s); err != nil {
					p.errorf(p.nodeRange(fr, fv), CodeBadRegex, "RE2 rejects this pattern: "+regexReason(err)+"; Go regexps have no backreferences or lookaround")
					return false
				}
			}
			a.Value, hasKey = s, true
		default:
			p.errorf(p.nodeRange(fr, fk), CodeMalformedAssertion, "unknown `"+tk.Value+"` key "+quote(fk.Value)+": "+shape)
			return false
		}
	}
	if !hasPath || !hasKey {
		p.errorf(a.Range, CodeMalformedAssertion, shape)
		return false
	}
	return true
}

// filePath reads one workspace file path operand.
func (p *parser) filePath(fr fragment, tk, tv *yaml.Node, a *Assertion) bool {
	s, ok := scalar(tv)
	if !ok || s == "" || resolve(tv).Kind != yaml.ScalarNode {
		p.errorf(a.Range, CodeMalformedAssertion, "`"+tk.Value+"` needs one file path in the workspace, such as src/main.go")
		return false
	}
	if err := checkWorkspaceFile(s); err != nil {
		p.errorf(p.nodeRange(fr, tv), CodeMalformedAssertion, "`"+tk.Value+"` "+err.Error())
		return false
	}
	a.op().Path = s
	return true
}

// filePaths reads the list of filesChanged ([] means nothing changed).
func (p *parser) filePaths(fr fragment, tk, tv *yaml.Node, a *Assertion) bool {
	v := resolve(tv)
	if v == nil || v.Kind != yaml.SequenceNode {
		p.errorf(a.Range, CodeMalformedAssertion, "`filesChanged` needs a list of file paths, such as [src/main.go]; [] means nothing changed")
		return false
	}
	seen := map[string]bool{}
	a.op().Paths = []string{}
	for _, item := range v.Content {
		s, ok := scalar(item)
		if !ok || s == "" || resolve(item).Kind != yaml.ScalarNode {
			p.errorf(p.nodeRange(fr, item), CodeMalformedAssertion, "`filesChanged` lists file paths, one per item")
			return false
		}
		if err := checkWorkspaceFile(s); err != nil {
			p.errorf(p.nodeRange(fr, item), CodeMalformedAssertion, "`filesChanged` "+err.Error())
			return false
		}
		if seen[s] {
			p.errorf(p.nodeRange(fr, item), CodeMalformedAssertion, "`filesChanged` lists "+quote(s)+" twice: keep one")
			return false
		}
		seen[s] = true
		a.op().Paths = append(a.op().Paths, s)
	}
	return true
}

func (p *parser) assertions(fr fragment, k, v *yaml.Node) []Assertion {
	v = resolve(v)
	if v == nil || v.Kind != yaml.SequenceNode {
		p.errorf(p.pairRange(fr, k, v), CodeMalformedAssertion, "`assert` must be a list of assertions, such as `- contains: TEXT`")
		return nil
	}
	out := make([]Assertion, 0, len(v.Content))
	for i, entry := range v.Content {
		entry = resolve(entry)
		r := p.nodeRange(fr, entry)
		if entry.Kind != yaml.MappingNode || len(entry.Content) != 2 {
			p.errorf(r, CodeMalformedAssertion, "write each assertion as exactly one `type: operand` entry, such as `- contains: TEXT`")
			continue
		}
		tk, tv := entry.Content[0], entry.Content[1]
		a := Assertion{Index: i, Type: AssertionType(tk.Value), Range: p.pairRange(fr, tk, tv)}
		if a.Type.IsTrajectory() && a.Type != ToolCalled && a.Type != ToolNotCalled && p.toolsKnown && len(p.declared) == 0 {
			p.errorf(p.nodeRange(fr, tk), CodeNoToolsDeclared,
				"`"+tk.Value+"` checks the tools the agent called, and this file declares none: add the tools to the frontmatter `tools:` list, or remove the assertion")
			continue
		}
		switch a.Type {
		case Contains, NotContains, Regex, ToolCalled, ToolNotCalled:
			s, ok := scalar(tv)
			if !ok || s == "" || resolve(tv).Kind != yaml.ScalarNode {
				p.errorf(a.Range, CodeMalformedAssertion, "`"+tk.Value+"` needs one non-empty text operand")
				continue
			}
			a.Value = s
			switch a.Type {
			case Regex:
				if err := p.compileRegex(s); err != nil {
					p.errorf(p.nodeRange(fr, tv), CodeBadRegex, "RE2 rejects this pattern: "+regexReason(err)+"; Go regexps have no backreferences or lookaround")
					continue
				}
			case ToolCalled, ToolNotCalled:
				if !p.declaredTool(fr, tv, s) {
					continue
				}
			}
		case LLMJudge:
			if !p.judge(fr, tk, tv, &a) {
				continue
			}
		case FileContains, FileNotContains:
			if !p.fileOperand(fr, tk, tv, &a, "text") {
				continue
			}
		case FileMatches:
			if !p.fileOperand(fr, tk, tv, &a, "regex") {
				continue
			}
		case FileUnchanged:
			if !p.filePath(fr, tk, tv, &a) {
				continue
			}
		case FilesChanged:
			if !p.filePaths(fr, tk, tv, &a) {
				continue
			}
		case ToolCalledWith:
			if !p.toolCalledWith(fr, tv, &a) {
				continue
			}
		case ToolOrder:
			if !p.toolOrder(fr, tv, &a) {
				continue
			}
		case ToolCalls:
			if !p.toolCalls(fr, tv, &a) {
				continue
			}
		case NoOtherTools:
			if b, ok := scalar(tv); !ok || resolve(tv).ShortTag() != "!!bool" || b != "true" {
				p.errorf(a.Range, CodeMalformedAssertion, "`noOtherTools` takes `true`; remove it to allow any declared tool")
				continue
			}
		case MaxLatencyMs, MaxTokens:
			n, err := wholeNumber(tv, 1, maxBudget)
			if err != nil {
				p.errorf(a.Range, CodeBadBudget, "`"+tk.Value+"` "+err.Error()+fmt.Sprintf(": use a whole number from 1 to %d", maxBudget))
				continue
			}
			a.op().Limit = n
		default:
			p.errorf(p.nodeRange(fr, tk), CodeUnknownAssertion, "unknown assertion type "+quote(tk.Value)+": use "+assertionTypes)
			continue
		}
		out = append(out, a)
	}
	return p.listNames(out)
}

// listNames gives each noOtherTools of one assert list the names the list
// allows: those its toolCalled, toolCalledWith and toolOrder assertions
// name. A noOtherTools with none is refused here (KMX3009) and dropped.
func (p *parser) listNames(as []Assertion) []Assertion {
	var listed []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			listed = append(listed, n)
		}
	}
	others := false
	for _, a := range as {
		switch a.Type {
		case ToolCalled, ToolCalledWith:
			add(a.Value)
		case ToolOrder:
			for _, n := range a.op().Names {
				add(n)
			}
		case NoOtherTools:
			others = true
		}
	}
	if !others {
		return as
	}
	kept := as[:0]
	for _, a := range as {
		if a.Type == NoOtherTools {
			if len(listed) == 0 {
				p.errorf(a.Range, CodeNothingListed,
					"`noOtherTools` allows the tools this assert list names in toolCalled, toolCalledWith or toolOrder, and it names none: add them, or use `toolCalls: {max: 0}` for a turn that calls no tool")
				continue
			}
			a.op().Names = listed
		}
		kept = append(kept, a)
	}
	return kept
}

// maxBudget bounds maxLatencyMs and maxTokens, and toolCalls' counts are
// bounded by maxCallCount.
const (
	maxBudget    = 100_000_000
	maxCallCount = 1000
)

// declaredTool checks that an assertion names a tool the header declares,
// as the header writes it.
func (p *parser) declaredTool(fr fragment, n *yaml.Node, name string) bool {
	if p.toolsKnown && !p.declaresTool(name) {
		p.errorf(p.nodeRange(fr, n), CodeAssertUndeclared,
			"tool "+quote(name)+" is not declared: add it to the frontmatter `tools:` list or fix the name")
		return false
	}
	return true
}

// toolCalledWith reads `{name: TOOL, arguments: {...}}`.
func (p *parser) toolCalledWith(fr fragment, v *yaml.Node, a *Assertion) bool {
	const shape = "`toolCalledWith` needs a mapping `{name: TOOL, arguments: {KEY: VALUE, ...}}`"
	v = resolve(v)
	if v == nil || v.Kind != yaml.MappingNode {
		p.errorf(a.Range, CodeMalformedAssertion, shape)
		return false
	}
	ok, hasArgs := true, false
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		switch k.Value {
		case "name":
			s, isStr := scalar(val)
			if !isStr || s == "" || resolve(val).Kind != yaml.ScalarNode {
				p.errorf(p.pairRange(fr, k, val), CodeMalformedAssertion, "`name` must be one declared tool reference")
				ok = false
				continue
			}
			if !p.declaredTool(fr, val, s) {
				ok = false
				continue
			}
			a.Value = s
		case "arguments":
			hasArgs = true
			if m := resolve(val); m == nil || m.Kind != yaml.MappingNode {
				p.errorf(p.pairRange(fr, k, val), CodeMalformedAssertion, "`arguments` must be a mapping, such as `{query: kmx}`: a call matches when its arguments hold these keys with these values")
				ok = false
				continue
			}
			js, err := toJSON(val)
			if err != nil {
				p.errorf(p.pairRange(fr, k, val), CodeMalformedAssertion, "`arguments` has no JSON form: "+err.Error())
				ok = false
				continue
			}
			a.op().Arguments = js
		default:
			p.errorf(p.nodeRange(fr, k), CodeMalformedAssertion, "unknown `toolCalledWith` key "+quote(k.Value)+": use name and arguments")
			ok = false
		}
	}
	if ok && (a.Value == "" || !hasArgs) {
		p.errorf(a.Range, CodeMalformedAssertion, shape+"; use `toolCalled` to check the name alone")
		return false
	}
	return ok
}

// toolOrder reads `[TOOL, TOOL, ...]`: at least two declared names.
func (p *parser) toolOrder(fr fragment, v *yaml.Node, a *Assertion) bool {
	v = resolve(v)
	if v == nil || v.Kind != yaml.SequenceNode || len(v.Content) < 2 {
		p.errorf(a.Range, CodeMalformedAssertion, "`toolOrder` needs a list of at least two declared tool names, in the order they must be called; use `toolCalled` for one")
		return false
	}
	ok := true
	names := make([]string, 0, len(v.Content))
	for _, item := range v.Content {
		s, isStr := scalar(item)
		if !isStr || s == "" || resolve(item).Kind != yaml.ScalarNode {
			p.errorf(p.nodeRange(fr, item), CodeMalformedAssertion, "each entry of `toolOrder` must be one declared tool reference")
			ok = false
			continue
		}
		if !p.declaredTool(fr, item, s) {
			ok = false
			continue
		}
		names = append(names, s)
	}
	a.op().Names = names
	return ok
}

// toolCalls reads `{min: N}`, `{max: N}` or both.
func (p *parser) toolCalls(fr fragment, v *yaml.Node, a *Assertion) bool {
	const shape = "`toolCalls` needs `{max: N}`, `{min: N}` or both: bounds on how many tool calls the turn makes"
	v = resolve(v)
	if v == nil || v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		p.errorf(a.Range, CodeMalformedAssertion, shape)
		return false
	}
	ok := true
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		var dst **int
		switch k.Value {
		case "min":
			dst = &a.op().Min
		case "max":
			dst = &a.op().Max
		default:
			p.errorf(p.nodeRange(fr, k), CodeMalformedAssertion, "unknown `toolCalls` key "+quote(k.Value)+": use min and max")
			ok = false
			continue
		}
		n, err := wholeNumber(val, 0, maxCallCount)
		if err != nil {
			p.errorf(p.pairRange(fr, k, val), CodeMalformedAssertion, "`"+k.Value+"` "+err.Error()+fmt.Sprintf(": use a whole number from 0 to %d", maxCallCount))
			ok = false
			continue
		}
		*dst = &n
	}
	if ok && a.op().Min != nil && a.op().Max != nil && *a.op().Min > *a.op().Max {
		p.errorf(a.Range, CodeMalformedAssertion, fmt.Sprintf("`toolCalls` has min %d above max %d: no turn can pass it", *a.op().Min, *a.op().Max))
		return false
	}
	return ok
}

// compileRegex checks a pattern as regexp.Compile would, once per distinct
// pattern in the file: generated files repeat the same few patterns. Only
// syntax.Parse with the flags regexp.Compile uses (syntax.Perl) can fail in
// regexp.Compile (syntax.Compile and the rest never return an error), so
// parsing gives exactly its errors without building the program the judge
// builds again anyway; TestRegexCheckMatchesRegexpCompile holds them
// together.
func (p *parser) compileRegex(pattern string) error {
	if err, seen := p.regexps[pattern]; seen {
		return err
	}
	_, err := syntax.Parse(pattern, syntax.Perl)
	if p.regexps == nil {
		p.regexps = map[string]error{}
	}
	p.regexps[pattern] = err
	return err
}

func regexReason(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code) + " in " + quote(se.Expr)
	}
	return "the pattern does not compile"
}

func (p *parser) judge(fr fragment, k, v *yaml.Node, a *Assertion) bool {
	v = resolve(v)
	if v == nil || v.Kind != yaml.MappingNode {
		p.errorf(a.Range, CodeMalformedAssertion, "`llmJudge` needs a mapping with `rubric:` (and optionally judgeModel, threshold)")
		return false
	}
	ok := true
	for i := 0; i+1 < len(v.Content); i += 2 {
		jk, jv := v.Content[i], v.Content[i+1]
		r := p.pairRange(fr, jk, jv)
		switch jk.Value {
		case "rubric":
			s, _ := scalar(jv)
			if strings.TrimSpace(s) == "" || resolve(jv).Kind != yaml.ScalarNode {
				p.errorf(r, CodeNoRubric, "`rubric` is empty: say what the judge should look for in the answer")
				ok = false
			}
			a.op().Rubric = s
		case "judgeModel":
			s, isStr := scalar(jv)
			if !isStr || s == "" {
				p.errorf(r, CodeMalformedAssertion, "`judgeModel` must be one model name; remove it to judge with the agent's model")
				ok = false
			}
			a.op().JudgeModel = s
		case "threshold":
			n, err := threshold(jv)
			if err != nil {
				p.errorf(r, CodeBadThreshold, "`threshold` "+err.Error()+": use a whole number from 0 to 100, or remove it for the default")
				ok = false
				continue
			}
			a.op().Threshold = &n
		default:
			p.errorf(p.nodeRange(fr, jk), CodeMalformedAssertion, "unknown `llmJudge` key "+quote(jk.Value)+": use rubric, judgeModel and threshold")
			ok = false
		}
	}
	if a.op().Rubric == "" && ok {
		p.errorf(p.nodeRange(fr, k), CodeNoRubric, "`llmJudge` has no `rubric`: add one saying what the judge should look for")
		ok = false
	}
	return ok
}

func threshold(v *yaml.Node) (int, error) {
	return wholeNumber(v, 0, 100)
}

// wholeNumber reads a YAML integer in [lo, hi].
func wholeNumber(v *yaml.Node, lo, hi int) (int, error) {
	v = resolve(v)
	if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
		return 0, errors.New("is not an integer")
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v.Value, "_", ""), 0, 64)
	if err != nil {
		var d int
		if v.Decode(&d) != nil {
			return 0, errors.New("is not an integer")
		}
		n = int64(d)
	}
	if n < int64(lo) || n > int64(hi) {
		return 0, fmt.Errorf("is %d, outside %d..%d", n, lo, hi)
	}
	return int(n), nil
}

func (p *parser) recordings(fr fragment, k, v *yaml.Node) []ToolRecording {
	v = resolve(v)
	if v == nil || v.Kind != yaml.MappingNode {
		p.errorf(p.pairRange(fr, k, v), CodeMalformedRecording, "example `tools` must map tool names to recordings: `NAME: {recorded: {calls: [...]}}`")
		return nil
	}
	out := make([]ToolRecording, 0, len(v.Content)/2)
	for i := 0; i+1 < len(v.Content); i += 2 {
		tk, tv := v.Content[i], v.Content[i+1]
		r := p.nodeRange(fr, tk)
		if p.toolsKnown && !p.declaresTool(tk.Value) {
			p.errorf(r, CodeRecordingUndecl, "recording for tool "+quote(tk.Value)+", which the frontmatter does not declare: add it to `tools:` or fix the name")
			continue
		}
		rec, calls, err := p.recording(tv)
		if err != "" {
			p.errorf(p.pairRange(fr, tk, tv), CodeMalformedRecording, "recording for "+quote(tk.Value)+" "+err)
			continue
		}
		rec.Tool, rec.Range, rec.CallsRange = tk.Value, r, p.nodeRange(fr, calls)
		out = append(out, rec)
	}
	return out
}

// recording reads `{recorded: {calls: [{arguments, result}...]}}` and
// returns its calls node; the returned text says what is wrong, empty
// when nothing is.
func (p *parser) recording(v *yaml.Node) (ToolRecording, *yaml.Node, string) {
	const shape = "must be `recorded: {calls: [{arguments: ..., result: ...}]}` (`calls: []` while pending)"
	v = resolve(v)
	if v == nil || v.Kind != yaml.MappingNode || len(v.Content) != 2 || v.Content[0].Value != "recorded" {
		return ToolRecording{}, nil, shape
	}
	rec := resolve(v.Content[1])
	if rec == nil || rec.Kind != yaml.MappingNode || len(rec.Content) != 2 || rec.Content[0].Value != "calls" {
		return ToolRecording{}, nil, shape
	}
	calls := resolve(rec.Content[1])
	if calls == nil || calls.Kind != yaml.SequenceNode {
		return ToolRecording{}, nil, shape
	}
	out := ToolRecording{Pending: len(calls.Content) == 0}
	for _, c := range calls.Content {
		c = resolve(c)
		if c == nil || c.Kind != yaml.MappingNode {
			return ToolRecording{}, nil, "has a call that is not a mapping of `arguments` and `result`"
		}
		var call RecordedCall
		for i := 0; i+1 < len(c.Content); i += 2 {
			js, err := toJSON(c.Content[i+1])
			if err != nil {
				return ToolRecording{}, nil, "has a value with no JSON form: " + err.Error()
			}
			switch c.Content[i].Value {
			case "arguments":
				call.Arguments = js
			case "result":
				call.Result = js
			default:
				return ToolRecording{}, nil, "has a call key " + quote(c.Content[i].Value) + ": a call has only `arguments` and `result`"
			}
		}
		if call.Arguments == "" || call.Result == "" {
			return ToolRecording{}, nil, "has a call without `arguments` or `result`: give both"
		}
		out.Calls = append(out.Calls, call)
	}
	return out, calls, ""
}
