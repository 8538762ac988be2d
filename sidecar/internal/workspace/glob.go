package workspace

import (
	"regexp"
	"strings"
)

// compileGlob turns a VS Code glob into a regexp over slash-separated
// relative paths: ** any number of folders, * and ? within one name,
// {a,b} alternatives, [abc] and [!abc] classes. A pattern without a slash
// also matches a file's name alone (so *.go finds every Go file).
func compileGlob(glob string) (*regexp.Regexp, bool, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case c == '*' && strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case c == '*' && strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '{':
			depth++
			b.WriteString("(?:")
		case c == '}' && depth > 0:
			depth--
			b.WriteString(")")
		case c == ',' && depth > 0:
			b.WriteString("|")
		case c == '[':
			j := strings.IndexByte(glob[i+1:], ']')
			if j < 0 {
				return nil, false, toolErr("the glob %q has a [ without its ]", glob)
			}
			class := glob[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth != 0 {
		return nil, false, toolErr("the glob %q has a { without its }", glob)
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, false, toolErr("the glob %q is not valid", glob)
	}
	return re, !strings.Contains(glob, "/"), nil
}

// globMatch reports whether rel matches the compiled glob.
func globMatch(re *regexp.Regexp, nameToo bool, rel string) bool {
	if re.MatchString(rel) {
		return true
	}
	if nameToo {
		if i := strings.LastIndexByte(rel, '/'); i >= 0 {
			return re.MatchString(rel[i+1:])
		}
	}
	return false
}
