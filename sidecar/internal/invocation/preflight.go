package invocation

import (
	"bytes"
	"context"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// CodeRefusal is the diagnostic code of what Run and Test would refuse.
const CodeRefusal = "kmx-refusal"

// Preflight says what Run or Test of the whole file would refuse before
// any send, given opts (the editor's settings): a non-fake model with no
// endpoint and no editor model, the fake model with an endpoint, an
// llmJudge without a judge route, a tool assertion, a bad route setting.
// It is the runner's own check (prepare), so the words are the same; it
// creates nothing and makes zero model calls. res is the caller's parse of
// src; a file that is not Valid has its parse diagnostics instead.
//
// The diagnostic sits on the line that causes the refusal: the assertion,
// else the header's model line, else the first line. path and src are the
// agent file's; with a sibling examples file, a diagnostic on an example or
// an assertion names that file in File, as parse diagnostics do.
func Preflight(ctx context.Context, opts Options, path string, src []byte, res agentfile.Result) []agentfile.Diagnostic {
	if res.State != agentfile.Valid || res.Agent == nil || len(res.Agent.Examples) == 0 {
		return nil
	}
	if opts.Editor != nil {
		opts.Editor = preflightEditor{EditorHost: opts.Editor, refs: namedModels(opts, res.Agent), tools: declared(res.Agent)}
	}
	_, err := prepareParsed(ctx, opts, Request{Path: path, Source: src}, res)
	r, ok := AsRefusal(err)
	if !ok {
		return nil
	}
	at := modelLine(src)
	if r.At != nil {
		at = *r.At
	}
	msg := "kmx would refuse to run this: " + r.Msg
	if r.Next != "" {
		msg += "; " + r.Next
	}
	code := CodeRefusal
	if r.Code != "" {
		code = r.Code
	}
	d := agentfile.Diagnostic{Range: at, Severity: agentfile.SeverityWarning, Code: code, Message: msg}
	if r.At != nil && res.Agent.ExamplesFile != "" && inExamples(res.Agent, *r.At) {
		// An example or assertion of a pair is a range in the examples
		// file: say so, as the parser does.
		d.File = res.Agent.ExamplesFile
	}
	return []agentfile.Diagnostic{d}
}

// inExamples reports whether at is the range of one of a's examples or
// assertions.
func inExamples(a *agentfile.Agent, at agentfile.Range) bool {
	for _, ex := range a.Examples {
		if ex.Range == at {
			return true
		}
		for _, as := range ex.AllAssertions() {
			if as.Range == at {
				return true
			}
		}
	}
	return false
}

// modelLine is the range of the header's model line, else of the first
// line: where a route refusal is shown.
func modelLine(src []byte) agentfile.Range {
	lines := bytes.SplitAfter(src, []byte("\n"))
	first := lineRange(lines, 0)
	if len(lines) == 0 || string(bytes.TrimSpace(lines[0])) != "---" {
		return first
	}
	for i := 1; i < len(lines); i++ {
		l := bytes.TrimSpace(lines[i])
		if string(l) == "---" {
			break
		}
		if rest, ok := bytes.CutPrefix(l, []byte("model")); ok && bytes.HasPrefix(bytes.TrimSpace(rest), []byte(":")) {
			return lineRange(lines, i)
		}
	}
	return first
}

// lineRange covers line i (without its line break), in UTF-16 columns as
// diagnostics are.
func lineRange(lines [][]byte, i int) agentfile.Range {
	offset := 0
	for _, l := range lines[:min(i, len(lines))] {
		offset += len(l)
	}
	text := []byte{}
	if i < len(lines) {
		text = bytes.TrimRight(lines[i], "\r\n")
	}
	width := 0
	for _, r := range string(text) {
		width++
		if r > 0xFFFF {
			width++
		}
	}
	return agentfile.Range{
		Start: agentfile.Position{Offset: offset, Line: i},
		End:   agentfile.Position{Offset: offset + len(text), Line: i, Character: width},
	}
}

// preflightEditor stands in for VS Code in Preflight: it offers every
// model the file or the settings name and every tool the file declares,
// so Preflight asks the editor nothing (listing models and tools is a
// run's business, once per run) and reports only what fails whatever
// VS Code offers.
type preflightEditor struct {
	route.EditorHost
	refs  []string
	tools []string
}

func (p preflightEditor) Tools(context.Context) ([]route.EditorToolInfo, error) {
	out := make([]route.EditorToolInfo, 0, len(p.tools))
	for _, n := range p.tools {
		out = append(out, route.EditorToolInfo{Name: n})
	}
	return out, nil
}

func (p preflightEditor) Models(context.Context) ([]route.EditorModelInfo, error) {
	out := make([]route.EditorModelInfo, 0, len(p.refs))
	for _, r := range p.refs {
		out = append(out, route.EditorModelInfo{Handle: "preflight", ID: r, Name: r})
	}
	return out, nil
}

// namedModels is every model name the agent and its llmJudge assertions
// would be resolved by, each once.
func namedModels(opts Options, a *agentfile.Agent) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	refs := agentModelRefs(opts, a)
	for _, r := range refs {
		add(r)
	}
	for _, ex := range a.Examples {
		for _, as := range ex.AllAssertions() {
			if as.Type == agentfile.LLMJudge {
				add(as.Operands().JudgeModel)
			}
		}
	}
	return out
}
