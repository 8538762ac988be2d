package agentfile

import (
	"fmt"
	"regexp"

	"gopkg.in/yaml.v3"
)

var (
	idPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	toolPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

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
			"the frontmatter must be a mapping of `key: value` lines (name, description, model, tools)")
		return
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "name":
			s, ok := scalar(v)
			if !ok || !idPattern.MatchString(s) {
				p.errorf(p.pairRange(fr, k, v), CodeBadName,
					"`name` is the agent ID: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
				continue
			}
			p.agent.ID = s
		case "description":
			s, ok := scalar(v)
			if !ok && !isNull(v) {
				p.errorf(p.pairRange(fr, k, v), CodeDescriptionNotStr, "`description` must be one string")
				continue
			}
			p.agent.Description = s
		case "model":
			s, ok := scalar(v)
			if !ok || s == "" {
				p.errorf(p.pairRange(fr, k, v), CodeModelNotString,
					"`model` must be one model name such as `fake`; remove the key to use the default")
				continue
			}
			p.agent.Model = &s
		case "tools":
			p.checkToolDeclaration(fr, k, v)
		default:
			p.report(p.nodeRange(fr, k), SeverityWarning, CodeUnknownFrontmatter,
				"kmx ignores frontmatter key "+quote(k.Value)+" (it knows name, description, model and tools); check the spelling if kmx should read it")
		}
	}
}

func (p *parser) checkToolDeclaration(fr fragment, k, v *yaml.Node) {
	if isNull(v) {
		return
	}
	v = resolve(v)
	if v.Kind != yaml.SequenceNode {
		p.toolsKnown = false
		p.errorf(p.pairRange(fr, k, v), CodeToolsNotList, "`tools` must be a list of tool names, such as `tools: [github_list_merged_prs]`")
		return
	}
	first := map[string]int{}
	for i, item := range v.Content {
		r := p.nodeRange(fr, item)
		name, ok := scalar(item)
		if !ok || resolve(item).Kind != yaml.ScalarNode {
			p.toolsKnown = false
			p.errorf(r, CodeToolsNotList, "each entry of `tools` must be a tool name, not a mapping or list")
			continue
		}
		if !toolPattern.MatchString(name) {
			p.errorf(r, CodeBadToolName, "tool name "+quote(name)+" is not allowed: use 1-64 letters, digits, '_' or '-'")
			continue
		}
		if line, dup := first[name]; dup {
			p.errorf(r, CodeDuplicateTool, fmt.Sprintf("tool %s is already declared on line %d: list each tool once", quote(name), line))
			continue
		}
		first[name] = r.Start.Line + 1
		if i == MaxTools {
			p.errorf(r, CodeTooManyTools, fmt.Sprintf("at most %d tools may be declared: remove this one and the ones after it", MaxTools))
		}
		p.declared[name] = true
		p.agent.Tools = append(p.agent.Tools, Tool{Name: name, Range: r})
	}
}
