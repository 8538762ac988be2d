package agentfile

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// fragment is a YAML text inside the file: yaml.v3 positions are relative
// to its first line.
type fragment struct {
	start, end int
	baseLine   int
}

// maxRecordingJSON bounds one recorded value's JSON text.
const maxRecordingJSON = 1 << 20

var yamlErrLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML parses a fragment into its root node. It returns nil (and no
// diagnostic) for a fragment holding only comments and blank lines, and
// reports a KMX1001 diagnostic for YAML that does not parse. yaml.v3 has
// panicked on hostile input in past releases; a panic here becomes a
// diagnostic, never a crash of the editor's language server.
func (p *parser) parseYAML(fr fragment) (root *yaml.Node, ok bool) {
	root, err := decodeYAML(p.src.text[fr.start:fr.end])
	if err != nil {
		p.yamlError(fr, err)
		return nil, false
	}
	return root, true
}

// decodeYAML decodes one YAML document into its root node (nil for a text
// of only comments and blank lines), refusing a second document and
// turning a yaml.v3 panic into an error.
func decodeYAML(text string) (root *yaml.Node, err error) {
	var doc, extra yaml.Node
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("yaml: the YAML parser failed on this block")
		}
	}()
	dec := yaml.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, err
	}
	// A second document would be silently ignored; refuse it.
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("yaml: line %d: a second YAML document starts here (remove the `---` line and keep one)", max(extra.Line, 1))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

func (p *parser) yamlError(fr fragment, err error) {
	msg := err.Error()
	first := p.src.lineOf(fr.start)
	lastLine := p.src.lineOf(max(fr.start, fr.end-1))
	l := first
	if m := yamlErrLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		n = culpritLine(p.src.text[fr.start:fr.end], n, m[2])
		l = min(max(first, fr.baseLine+n-1), lastLine)
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if len(secrets.Scan(msg)) > 0 {
		msg = "this line is not valid YAML"
	}
	// From the line's first character: a mis-indented line is marked
	// where its text starts, the column its indentation put it in.
	r := p.src.lineRange(l)
	start := p.src.lineStarts[l]
	text := p.src.text[start:p.src.lineEnd(l)]
	r.Start = p.src.pos(start + len(text) - len(strings.TrimLeft(text, " \t")))
	p.errorf(r, CodeYAMLSyntax, "YAML does not parse: "+msg+"; fix the syntax here")
}

// culpritSearch bounds how many lines past yaml.v3's line culpritLine
// tries, so a long fragment costs a few parses, never one per line.
const culpritSearch = 64

// culpritLine is the 1-based line of text where the YAML stops parsing.
// yaml.v3 names, for some errors, the line of the last token it accepted:
// a mis-indented "- id:" or key is reported on the line above it
// ("did not find expected '-' indicator"). So the first prefix of whole
// lines, from yaml's line on, that fails for a reason other than ending
// early is the line to mark. An error that is itself about the text ending
// early (an unclosed quote or bracket) keeps yaml's line, as does a search
// that finds nothing.
func culpritLine(text string, reported int, msg string) int {
	if endsEarly(msg) || reported < 1 {
		return reported
	}
	// starts[i] is the offset of line i+1.
	starts := []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' && i+1 < len(text) {
			starts = append(starts, i+1)
		}
	}
	for k := reported; k <= len(starts) && k < reported+culpritSearch; k++ {
		end := len(text)
		if k < len(starts) {
			end = starts[k]
		}
		if _, err := decodeYAML(text[:end]); err != nil && !endsEarly(err.Error()) {
			return k
		}
	}
	return reported
}

// endsEarly reports a YAML error about text that ends inside a construct.
func endsEarly(msg string) bool {
	return strings.Contains(msg, "end of stream") || strings.Contains(msg, "unexpected end")
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

// scalar returns a node's text when it is a non-null scalar.
func scalar(n *yaml.Node) (string, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", false
	}
	return n.Value, true
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// nodeStart maps a node's position to a byte offset inside the fragment.
// The result is clamped to the fragment because yaml.v3 also breaks lines
// at a lone '\r', which the line index does not.
func (p *parser) nodeStart(fr fragment, n *yaml.Node) int {
	return min(max(p.src.yamlOffset(fr.baseLine, n.Line, n.Column), fr.start), fr.end)
}

// nodeEnd finds where a node's text ends. yaml.v3 records only starts, so
// the end is read from the source by the node's style.
func (p *parser) nodeEnd(fr fragment, n *yaml.Node) int {
	t := p.src.text
	start := p.nodeStart(fr, n)
	lineEnd := min(p.src.lineEnd(p.src.lineOf(start)), fr.end)
	switch n.Kind {
	case yaml.ScalarNode:
		switch {
		case n.Style&yaml.DoubleQuotedStyle != 0 && start < len(t) && t[start] == '"':
			for i := start + 1; i < fr.end; i++ {
				if t[i] == '\\' {
					i++
				} else if t[i] == '"' {
					return i + 1
				}
			}
			return lineEnd
		case n.Style&yaml.SingleQuotedStyle != 0 && start < len(t) && t[start] == '\'':
			for i := start + 1; i < fr.end; i++ {
				if t[i] == '\'' {
					if i+1 < fr.end && t[i+1] == '\'' {
						i++
						continue
					}
					return i + 1
				}
			}
			return lineEnd
		case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 && strings.HasPrefix(t[start:fr.end], n.Value):
			return start + len(n.Value)
		}
		return start + len(strings.TrimRight(t[start:lineEnd], " \t"))
	case yaml.AliasNode:
		return min(start+1+len(n.Value), fr.end)
	case yaml.MappingNode, yaml.SequenceNode:
		end := start
		if len(n.Content) > 0 {
			end = p.nodeEnd(fr, n.Content[len(n.Content)-1])
		}
		end = min(end, fr.end)
		if n.Style&yaml.FlowStyle != 0 {
			closer := byte(']')
			if n.Kind == yaml.MappingNode {
				closer = '}'
			}
			if i := strings.IndexByte(t[end:fr.end], closer); i >= 0 {
				end += i + 1
			}
		}
		return max(end, start)
	}
	return start
}

func (p *parser) nodeRange(fr fragment, n *yaml.Node) Range {
	return p.src.rng(p.nodeStart(fr, n), p.nodeEnd(fr, n))
}

// pairRange covers a mapping entry from its key to the end of its value.
func (p *parser) pairRange(fr fragment, k, v *yaml.Node) Range {
	return p.src.rng(p.nodeStart(fr, k), max(p.nodeEnd(fr, k), p.nodeEnd(fr, v)))
}

// checkNodes walks a parsed tree once: it reports keys repeated in any
// mapping, and credential shapes that only appear once a double-quoted
// string's escapes are decoded (the raw-text scan cannot see "\x67hp_...").
func (p *parser) checkNodes(fr fragment, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		var seen map[string]*yaml.Node
		if len(n.Content) > 2 {
			seen = make(map[string]*yaml.Node, len(n.Content)/2)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode && seen != nil {
				if first, dup := seen[k.Value]; dup {
					p.noMemo = true
					p.errorf(p.nodeRange(fr, k), CodeRepeatedKey, fmt.Sprintf(
						"key %s is repeated in this mapping (first on line %d): keep one; YAML would silently drop the other",
						quote(k.Value), p.src.lineOf(p.nodeStart(fr, first))+1))
				} else {
					seen[k.Value] = k
				}
			}
			p.checkNodes(fr, k)
			p.checkNodes(fr, n.Content[i+1])
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			p.checkNodes(fr, c)
		}
	case yaml.ScalarNode:
		if n.Style&yaml.DoubleQuotedStyle == 0 || strings.IndexByte(p.src.text[p.nodeStart(fr, n):p.nodeEnd(fr, n)], '\\') < 0 {
			return
		}
		start, end := p.nodeStart(fr, n), p.nodeEnd(fr, n)
		for _, f := range secrets.Scan(n.Value) {
			p.noMemo = true
			if p.credentialCovers(start, end) {
				return
			}
			p.errorf(p.src.rng(start, end), CodeCredential,
				"this quoted value decodes to "+secrets.WithArticle(f.Shape)+": remove it (and rotate it), and refer to credentials only by environment variable name")
		}
	}
}

func (p *parser) credentialCovers(start, end int) bool {
	for _, f := range p.credentials {
		if f.Start < end && start < f.End {
			return true
		}
	}
	return false
}

// toJSON renders a YAML value as compact JSON text, mapping keys in source
// order. Values with no JSON form (NaN, non-scalar keys, alias loops) are
// refused with a reason.
func toJSON(n *yaml.Node) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, n, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *strings.Builder, n *yaml.Node, depth int) error {
	if depth > 64 {
		return fmt.Errorf("it nests deeper than 64 levels (or an alias refers to itself)")
	}
	// Aliases can repeat a subtree exponentially ("billion laughs"); the
	// rendered text is bounded like a model reply body.
	if b.Len() > maxRecordingJSON {
		return fmt.Errorf("it expands to more than %d bytes of JSON", maxRecordingJSON)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return fmt.Errorf("an alias names no anchor")
		}
		return writeJSON(b, n.Alias, depth+1)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, ok := scalar(n.Content[i])
			if !ok {
				return fmt.Errorf("a mapping key on line %d is not a plain value", n.Content[i].Line)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			var v bool
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("a value on line %d is not a boolean", n.Line)
			}
			b.WriteString(strconv.FormatBool(v))
		case "!!int", "!!float":
			var v float64
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("a number on line %d does not fit JSON", n.Line)
			}
			if n.ShortTag() == "!!int" {
				var i int64
				if err := n.Decode(&i); err == nil {
					b.WriteString(strconv.FormatInt(i, 10))
					return nil
				}
			}
			s := strconv.FormatFloat(v, 'g', -1, 64)
			if strings.ContainsAny(s, "NI") { // NaN, +Inf, -Inf
				return fmt.Errorf("the number on line %d has no JSON form", n.Line)
			}
			b.WriteString(s)
		default:
			writeJSONString(b, n.Value)
		}
	default:
		return fmt.Errorf("an empty document has no JSON form")
	}
	return nil
}

func writeJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hex[(r>>shift)&0xF])
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
