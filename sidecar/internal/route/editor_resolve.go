package route

import (
	"fmt"
	"sort"
	"strings"
)

// ResolveError is a model reference the editor route could not resolve to
// exactly one model VS Code offers. It is raised in the preflight, before
// any journal exists or any request is sent. Msg says what is wrong, Next
// what to change (naming the models VS Code offers).
type ResolveError struct {
	Msg  string
	Next string
}

func (e *ResolveError) Error() string { return e.Msg + ": " + e.Next }

// NextStep is what to change (problem.Problem); Error ends with it.
func (e *ResolveError) NextStep() string { return e.Next }

// ResolveEditorModel resolves a model reference list the way VS Code
// resolves an agent's model: each reference, in order, matches a model
// whose id, display name or qualified name (`Name (vendor)`) is exactly
// the reference (no case folding, no prefix or family match). The first
// reference with exactly one match wins; a reference with several matches
// refuses (it is ambiguous, so which one VS Code would pick is not known);
// a list where no reference matches refuses.
func ResolveEditorModel(refs []string, offered []EditorModelInfo) (EditorModelInfo, error) {
	if len(refs) == 0 {
		return EditorModelInfo{}, &ResolveError{Msg: "no model is named", Next: "set model: in the agent file or choose one with kmx: Select Model"}
	}
	for _, ref := range refs {
		var hits []EditorModelInfo
		for _, m := range offered {
			if m.ID == ref || m.Name == ref || m.QualifiedName() == ref {
				hits = append(hits, m)
			}
		}
		switch len(hits) {
		case 0:
			continue
		case 1:
			return hits[0], nil
		default:
			names := make([]string, 0, len(hits))
			for _, h := range hits {
				names = append(names, fmt.Sprintf("%q (id %s)", h.QualifiedName(), h.ID))
			}
			return EditorModelInfo{}, &ResolveError{
				Msg:  fmt.Sprintf("model %q matches %d models VS Code offers", ref, len(hits)),
				Next: "name exactly one of them by its qualified name: " + strings.Join(names, ", "),
			}
		}
	}
	what := fmt.Sprintf("model %q is not offered by VS Code", refs[0])
	if len(refs) > 1 {
		quoted := make([]string, len(refs))
		for i, r := range refs {
			quoted[i] = fmt.Sprintf("%q", r)
		}
		what = "none of the models " + strings.Join(quoted, ", ") + " is offered by VS Code"
	}
	return EditorModelInfo{}, &ResolveError{Msg: what, Next: offeredText(offered)}
}

// offeredText says which models VS Code offers, for a refusal.
func offeredText(offered []EditorModelInfo) string {
	if len(offered) == 0 {
		return "VS Code offers no chat model: install or sign in to a language model provider (for example GitHub Copilot), use model: fake, or set kmx.endpoint"
	}
	names := make([]string, 0, len(offered))
	for _, m := range offered {
		names = append(names, fmt.Sprintf("%q (id %s)", m.QualifiedName(), m.ID))
	}
	return "use a model VS Code offers (an id, a name or a qualified name): " + firstNames(names, 20)
}

// firstNames sorts names and joins the first most of them, saying how many
// more there are: what VS Code offers can be a long list.
func firstNames(names []string, most int) string {
	sort.Strings(names)
	more := ""
	if len(names) > most {
		more = fmt.Sprintf(" and %d more", len(names)-most)
		names = names[:most]
	}
	return strings.Join(names, ", ") + more
}
