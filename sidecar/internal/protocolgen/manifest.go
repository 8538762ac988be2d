package protocolgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Manifest is what the generator owns in a VS Code extension's
// package.json: contributes.commands and contributes.configuration.
type Manifest struct {
	Commands []ManifestCommand
	// ConfigurationTitle is contributes.configuration.title.
	ConfigurationTitle string
	Properties         []Property
}

// ManifestCommand is one entry of contributes.commands.
type ManifestCommand struct {
	Command  string `json:"command"`
	Title    string `json:"title"`
	Category string `json:"category,omitempty"`
}

// Property is one setting of contributes.configuration.properties, its
// fields in the order they are written.
type Property struct {
	Key                 string   `json:"-"`
	Type                string   `json:"type"`
	Enum                []string `json:"enum,omitempty"`
	Default             any      `json:"default"`
	Minimum             *int     `json:"minimum,omitempty"`
	Maximum             *int     `json:"maximum,omitempty"`
	Scope               string   `json:"scope,omitempty"`
	MarkdownDescription string   `json:"markdownDescription"`
}

// properties keeps the settings in their order (a Go map would sort them).
type properties []Property

func (ps properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(p.Key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(p)
		if err != nil {
			return nil, fmt.Errorf("setting %s: %w", p.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping: package.json is read by
// people too, and `&` or `<` in a description should stay as written.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// PackageJSON returns manifest (a package.json) with the values of
// contributes.commands and contributes.configuration replaced by m's.
// Every other byte is kept as it was, so the hand-written parts (menus,
// scripts, key order, formatting) are untouched; the generated values are
// indented to sit where the old ones were. Both keys must already exist:
// the generator replaces, it never decides where a new key goes.
func PackageJSON(manifest []byte, m Manifest) ([]byte, error) {
	spans, err := contributesSpans(manifest, "commands", "configuration")
	if err != nil {
		return nil, err
	}
	values := map[string]any{
		"commands": m.Commands,
		"configuration": struct {
			Title      string     `json:"title"`
			Properties properties `json:"properties"`
		}{m.ConfigurationTitle, m.Properties},
	}
	out := append([]byte(nil), manifest...)
	// Replace the later span first so the earlier one's offsets hold.
	first, second := "commands", "configuration"
	if spans[first][0] > spans[second][0] {
		first, second = second, first
	}
	for _, key := range []string{second, first} {
		sp := spans[key]
		v, err := indented(values[key], lineIndent(manifest, sp[0]))
		if err != nil {
			return nil, fmt.Errorf("contributes.%s: %w", key, err)
		}
		out = append(out[:sp[0]:sp[0]], append(v, out[sp[1]:]...)...)
	}
	return out, nil
}

// contributesSpans finds the byte range of the value of each named key of
// the top-level "contributes" object.
func contributesSpans(manifest []byte, keys ...string) (map[string][2]int, error) {
	dec := json.NewDecoder(bytes.NewReader(manifest))
	if err := expectDelim(dec, '{', "package.json"); err != nil {
		return nil, err
	}
	spans := map[string][2]int{}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("package.json: %w", err)
		}
		if key != "contributes" {
			if err := skip(dec); err != nil {
				return nil, err
			}
			continue
		}
		if err := expectDelim(dec, '{', "package.json contributes"); err != nil {
			return nil, err
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("package.json contributes: %w", err)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("package.json contributes.%v: %w", k, err)
			}
			end := int(dec.InputOffset())
			if ks, ok := k.(string); ok {
				spans[ks] = [2]int{end - len(raw), end}
			}
		}
		break
	}
	for _, k := range keys {
		sp, ok := spans[k]
		if !ok {
			return nil, fmt.Errorf("package.json has no contributes.%s to replace: add an empty one where it should go", k)
		}
		if !bytes.Equal(bytes.TrimSpace(manifest[sp[0]:sp[1]]), manifest[sp[0]:sp[1]]) {
			return nil, fmt.Errorf("package.json contributes.%s: could not find where its value starts", k)
		}
	}
	return spans, nil
}

func expectDelim(dec *json.Decoder, d json.Delim, where string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if tok != d {
		return fmt.Errorf("%s: want %q, found %v", where, d, tok)
	}
	return nil
}

func skip(dec *json.Decoder) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("package.json: %w", err)
	}
	return nil
}

// lineIndent is the white space that starts the line holding offset.
func lineIndent(src []byte, offset int) string {
	start := bytes.LastIndexByte(src[:offset], '\n') + 1
	line := src[start:offset]
	return string(line[:len(line)-len(bytes.TrimLeft(line, " \t"))])
}

// indented is v as JSON indented by two spaces, its later lines prefixed
// with indent so it continues the line it starts on.
func indented(v any, indent string) ([]byte, error) {
	compact, err := marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, compact, indent, "  "); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ReplaceGenerated returns doc with the text between the lines
// "<!-- BEGIN GENERATED name -->" and "<!-- END GENERATED name -->"
// replaced by body (which should end with a newline). Both markers must be
// there, once.
func ReplaceGenerated(doc []byte, name string, body []byte) ([]byte, error) {
	begin := []byte("<!-- BEGIN GENERATED " + name + " -->\n")
	end := []byte("<!-- END GENERATED " + name + " -->")
	i := bytes.Index(doc, begin)
	j := bytes.Index(doc, end)
	if i < 0 || j < i || bytes.Count(doc, begin) != 1 || bytes.Count(doc, end) != 1 {
		return nil, fmt.Errorf("want one %q line followed by one %q line", strings.TrimSpace(string(begin)), string(end))
	}
	i += len(begin)
	return append(append(append([]byte(nil), doc[:i]...), body...), doc[j:]...), nil
}
