package agentfile

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kmxdev/kmx/sidecar/internal/vscodetools"
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// MaxToolReferenceBytes bounds one tool reference. VS Code sets no limit;
// this one only keeps a pasted paragraph from being taken for a tool.
const MaxToolReferenceBytes = 256

// headerKeys are the keys of VS Code's custom agent header (see
// docs/agent-file.md for what VS Code and kmx each do with them). kmx reads
// name, description, model and tools; the others are kept and never warned
// about. A key with a note changes what a local preview can mean, and says
// so once, as Information.
var headerKeys = map[string]string{
	"name":                     "",
	"description":              "",
	"model":                    "",
	"tools":                    "",
	"argument-hint":            "",
	"agents":                   "",
	"target":                   "",
	"user-invocable":           "",
	"user-invokable":           "", // the spelling VS Code accepted first
	"disable-model-invocation": "",
	"infer":                    "", // deprecated by VS Code, still read there
	"metadata":                 "", // GitHub's cloud agent
	"mcp-servers":              "a local preview does not start the MCP servers this key configures: tools they serve are answered by recordings, kmx.yaml bindings or the stub",
	"handoffs":                 "a local preview runs one agent and does not follow handoffs to other agents",
	"hooks":                    "a local preview does not run the hooks this key configures",
}

// checkFrontmatter reads the frontmatter text in [start, end).
func (p *parser) checkFrontmatter(start, end int) {
	fr := fragment{start: start, end: end, baseLine: p.src.lineOf(start)}
	root, ok := p.parseYAML(fr)
	if !ok {
		p.toolsKnown = false
		return
	}
	if isNull(root) {
		return
	}
	p.checkNodes(fr, root)
	if root.Kind != yaml.MappingNode {
		p.toolsKnown = false
		p.errorf(p.src.lineRange(p.src.lineOf(p.nodeStart(fr, root))), CodeFrontmatterNotMap,
			"the frontmatter must be a mapping of `key: value` lines (name, description, model, tools, ...)")
		return
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "name":
			s, ok := scalar(v)
			if !isNull(v) && (!ok || strings.ContainsAny(s, "\r\n")) {
				p.errorf(p.pairRange(fr, k, v), CodeBadName,
					"`name` is the display name: write it as one line of text, such as `name: Release notes`")
				continue
			}
			p.agent.Name = strings.TrimSpace(s)
		case "description":
			s, ok := scalar(v)
			if !ok && !isNull(v) {
				p.errorf(p.pairRange(fr, k, v), CodeDescriptionNotStr, "`description` must be one string")
				continue
			}
			p.agent.Description = s
		case "model":
			p.checkModel(fr, k, v)
		case "tools":
			p.checkToolDeclaration(fr, k, v)
		default:
			note, known := headerKeys[k.Value]
			switch {
			case !known:
				p.report(p.nodeRange(fr, k), SeverityWarning, CodeUnknownFrontmatter,
					"neither VS Code nor kmx knows the header key "+quote(k.Value)+"; check the spelling (see docs/agent-file.md for the keys)")
			case note != "":
				p.report(p.nodeRange(fr, k), SeverityInformation, CodePreviewNote, note)
			}
		}
	}
}

// checkModel reads `model: NAME` or `model: [FIRST, SECOND]` (VS Code uses
// the first that resolves). Names are kept as written: display names,
// ids and `Name (vendor)` are all names.
func (p *parser) checkModel(fr fragment, k, v *yaml.Node) {
	bad := func() {
		p.errorf(p.pairRange(fr, k, v), CodeModelNotString,
			"`model` must be a model name such as `fake`, or a list of names tried in order; remove the key to use the default")
	}
	if isNull(v) {
		return
	}
	if s, ok := scalar(v); ok {
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, "\r\n") {
			bad()
			return
		}
		p.agent.Models = []string{s}
		p.agent.Model = &p.agent.Models[0]
		return
	}
	list := resolve(v)
	if list.Kind != yaml.SequenceNode {
		bad()
		return
	}
	var names []string
	for _, item := range list.Content {
		s, ok := scalar(item)
		if !ok || strings.TrimSpace(s) == "" || strings.ContainsAny(s, "\r\n") {
			p.errorf(p.nodeRange(fr, item), CodeModelNotString, "each entry of `model` must be one model name on one line")
			return
		}
		names = append(names, s)
	}
	if len(names) > 0 {
		p.agent.Models = names
		p.agent.Model = &p.agent.Models[0]
	}
}

func (p *parser) checkToolDeclaration(fr fragment, k, v *yaml.Node) {
	if isNull(v) {
		return
	}
	v = resolve(v)
	if v.Kind != yaml.SequenceNode {
		p.toolsKnown = false
		p.errorf(p.pairRange(fr, k, v), CodeToolsNotList, "`tools` must be a list of tool references, such as `tools: ['edit/editFiles', 'github/*']`")
		return
	}
	first := map[string]int{}
	for _, item := range v.Content {
		r := p.nodeRange(fr, item)
		ref, ok := scalar(item)
		if !ok || resolve(item).Kind != yaml.ScalarNode {
			p.toolsKnown = false
			p.errorf(r, CodeToolsNotList, "each entry of `tools` must be a tool reference, not a mapping or list")
			continue
		}
		if problem := toolReferenceProblem(ref); problem != "" {
			p.errorf(r, CodeBadToolName, "tool reference "+quote(ref)+" "+problem)
			continue
		}
		if line, dup := first[ref]; dup {
			p.report(r, SeverityWarning, CodeDuplicateTool, fmt.Sprintf("tool %s is already listed on line %d: it counts once; remove this entry", quote(ref), line))
			continue
		}
		first[ref] = r.Start.Line + 1
		if len(p.agent.Tools) == MaxTools {
			p.errorf(r, CodeTooManyTools, fmt.Sprintf("at most %d tools may be listed: remove this one and the ones after it", MaxTools))
		}
		p.declared[ref] = true
		p.agent.Tools = append(p.agent.Tools, Tool{Name: ref, Range: r})
		if !vscodetools.Known(ref) {
			p.report(r, SeverityWarning, CodeUnknownTool, "tool "+quote(ref)+" is not one of VS Code's built-in tools ("+vscodetools.TableVersion+", VS Code "+vscodetools.VSCodeVersion+
				"): kmx still offers it, with a generic definition, answered by a recording or \"not available in this test\"; check the spelling, or keep it if an extension or MCP server provides it")
		}
	}
}

// toolReferenceProblem says what is wrong with a tool reference, or "".
// Every form VS Code accepts passes (a tool, a tool set, `set/tool`,
// `server/*`, `microsoft.docs.mcp`): kmx keeps references as written and
// binds them by exact string.
func toolReferenceProblem(ref string) string {
	switch {
	case ref == "":
		return "is empty: write the tool's name or remove the entry"
	case strings.TrimSpace(ref) != ref:
		return "starts or ends with white space: remove it"
	case strings.ContainsAny(ref, "\r\n"):
		return "spans several lines: write one reference per entry"
	case len(ref) > MaxToolReferenceBytes:
		return fmt.Sprintf("is longer than %d bytes: write the tool's name", MaxToolReferenceBytes)
	}
	return ""
}

// IDFromFileName returns the agent ID a file name gives: its base name
// without ".agent.md" (or ".chatmode.md", or ".md" for a file under
// .github/agents). ok is false when that is not a valid ID.
func IDFromFileName(name string) (id string, ok bool) {
	base := name
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	for _, ext := range []string{".agent.md", ".chatmode.md", ".md"} {
		if s, cut := strings.CutSuffix(base, ext); cut {
			base = s
			break
		}
	}
	return base, idPattern.MatchString(base)
}

// suggestID turns a file name that cannot be an ID into one that can.
func suggestID(base string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(base) {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-._")
	if len(s) > 64 {
		s = strings.Trim(s[:64], "-._")
	}
	if s == "" {
		return "agent"
	}
	return s
}

// checkFileID reports a file name that cannot make the agent ID.
func (p *parser) checkFileID(name string) {
	if name == "" {
		return
	}
	id, ok := IDFromFileName(name)
	if ok {
		return
	}
	base := name[strings.LastIndexAny(name, `/\`)+1:]
	p.errorf(p.src.lineRange(0), CodeBadFileName, fmt.Sprintf(
		"the agent ID comes from the file name, and %s cannot be one (1-64 letters, digits, '.', '_' or '-', starting with a letter or digit): rename the file to %s; the header's `name` stays the display name",
		quote(base), "`"+suggestID(id)+base[len(id):]+"`"))
}

// declaresTool reports whether the frontmatter declares name, or a
// reference standing for one of the same VS Code tools (`edit` declares
// `edit/editFiles`; `editFiles` and `edit/editFiles` are one tool).
func (p *parser) declaresTool(name string) bool {
	if p.declared[name] {
		return true
	}
	for ref := range p.declared {
		if vscodetools.Overlaps(name, ref) {
			return true
		}
	}
	return false
}
