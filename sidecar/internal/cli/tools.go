package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// toolLine says which tools an example called and what answered them, e.g.
// "tools: 1 call: github_list_merged_prs (recorded)"; "" when none was
// dispatched. Never arguments or results.
func toolLine(ex runner.ExampleResult) string {
	if ex.ToolCalls == 0 {
		return ""
	}
	parts := make([]string, 0, len(ex.ToolSources))
	for _, s := range ex.ToolSources {
		parts = append(parts, fmt.Sprintf("%s (%s)", s.Name, s.Source))
	}
	return fmt.Sprintf("tools: %s: %s", plural(ex.ToolCalls, "call"), strings.Join(parts, ", "))
}

// toolSettingsLine is the run's tools in a few figures (runner.ToolSummary),
// e.g. "tools: 6 declared, none disabled · 9 offered: 1 recorded, 8
// unavailable (…)"; "" for a file without tools. Every name and state is
// in the JSON report's toolSettings.
func toolSettingsLine(rep *runner.Report) string {
	return rep.Tools.Line()
}

// junitToolProps are an example's tool figures as JUnit properties; nil
// (no properties element) when it dispatched no tool.
func junitToolProps(ex runner.ExampleResult) *junitProps {
	props := &junitProps{}
	if ex.ToolCalls > 0 {
		props.Items = append(props.Items, junitProp{"toolCalls", fmt.Sprint(ex.ToolCalls)})
	}
	for _, s := range ex.ToolSources {
		props.Items = append(props.Items, junitProp{"toolSource", s.Name + "=" + s.Source})
	}
	// Usage as the routes reported it, the agent's and the judge's apart;
	// a multi-turn example's turns, each with its verdict.
	usage := func(prefix string, u *runner.Usage) {
		if u == nil {
			return
		}
		name := func(s string) string { // promptTokens, judgePromptTokens
			if prefix == "" {
				return s
			}
			return prefix + strings.ToUpper(s[:1]) + s[1:]
		}
		props.Items = append(props.Items, junitProp{name("promptTokens"), fmt.Sprint(u.PromptTokens)},
			junitProp{name("completionTokens"), fmt.Sprint(u.CompletionTokens)}, junitProp{name("totalTokens"), fmt.Sprint(u.TotalTokens)})
		if u.Unreported > 0 {
			props.Items = append(props.Items, junitProp{name("usageUnreported"), fmt.Sprint(u.Unreported)})
		}
	}
	usage("", ex.Usage)
	usage("judge", ex.JudgeUsage)
	for _, t := range ex.Turns {
		props.Items = append(props.Items, junitProp{"turn", fmt.Sprintf("%d=%s", t.Turn, t.Verdict)})
	}
	if len(props.Items) == 0 {
		return nil
	}
	return props
}

// printStubbed names, once, the tools that answered "not available in this
// test" and how to give them real results.
func printStubbed(w io.Writer, s *runner.StubbedReport) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "stubbed: %s %s in %s\nnext: %s\n", strings.Join(s.Tools, ", "), s.Message, plural(len(s.Examples), "example"), s.Next)
}

// printCapture says what became of the pending recordings a live call
// answered: saved into the file (with its new revision), or why not.
func printCapture(w io.Writer, c *runner.CaptureReport) {
	if c == nil {
		return
	}
	what := make([]string, 0, len(c.Captured))
	for _, t := range c.Captured {
		what = append(what, t.Example+"/"+t.Tool)
	}
	switch c.Status {
	case runner.CaptureSaved:
		fmt.Fprintf(w, "captured %s into %s (new revision %s; this result is for the executed one)\n", strings.Join(what, ", "), c.Path, short(c.Revision))
	default:
		fmt.Fprintf(w, "capture %s: %s\nnext: %s\n", c.Status, c.Message, c.Next)
	}
}
