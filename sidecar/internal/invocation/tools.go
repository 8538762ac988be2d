package invocation

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/ghread"
	"github.com/kmxdev/kmx/sidecar/internal/harness"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/route"
	kmxversion "github.com/kmxdev/kmx/sidecar/internal/version"
	"github.com/kmxdev/kmx/sidecar/internal/vscodetools"
)

// planTools is the tool part of a Plan: kmx.yaml's settings frozen at run
// start and each example's tool set. It is empty for a file that declares
// no tools: such a file runs on the tool-free chat harness.
type planTools struct {
	settings localtools.Settings
	// sets maps an example ID (or AdHocID) to its tool set.
	sets map[string][]localtools.Tool
	// shape is one example's tool set: every example's set holds the same
	// tools in the same states (only their recordings and sources differ).
	shape []localtools.Tool
	// github is the --tool-bindings read when the run uses it, else nil.
	github *githubRead
}

// declared is the file's declared tool names, in order.
func declared(a *agentfile.Agent) []string {
	out := make([]string, 0, len(a.Tools))
	for _, t := range a.Tools {
		out = append(out, t.Name)
	}
	return out
}

// prepareTools reads kmx.yaml beside the agent file, applies a
// --tool-bindings file (reading its credential once), and freezes every
// selected example's tool set. Every declared name is in every set: a
// declared tool is never left out. Refuses, before anything is created or
// sent, an unusable kmx.yaml, an unusable binding or credential, and a
// recording that holds a credential.
func prepareTools(opts Options, req Request, plan *Plan) error {
	names := declared(plan.Agent)
	settings, err := localtools.ReadSettings(req.Path, names)
	if err != nil {
		var se *localtools.SettingsError
		if errors.As(err, &se) {
			r := Refuse(se.NextStep(), "kmx.yaml cannot be used: %s", se.Error())
			r.Code = CodeSettings
			if len(plan.Agent.Tools) > 0 {
				r.At = &plan.Agent.Tools[0].Range
			}
			return r
		}
		return fmt.Errorf("read kmx.yaml: %w", err)
	}
	plan.tools = planTools{settings: settings, sets: map[string][]localtools.Tool{}}
	if len(names) == 0 {
		return nil
	}
	if err := bindGitHub(opts, req, plan); err != nil {
		return err
	}
	var bound map[string]bool
	if g := plan.tools.github; g != nil {
		bound = map[string]bool{g.name: true}
	}
	freeze := func(id string, recs []agentfile.ToolRecording) error {
		set, err := localtools.Freeze(settings, recs, bound)
		if err != nil {
			return Refuse("remove the credential from the recording; kmx never sends or journals credential-shaped text",
				"example %q: %s", id, err.Error())
		}
		plan.tools.sets[id] = set
		if plan.tools.shape == nil {
			plan.tools.shape = set
		}
		return nil
	}
	if plan.AdHoc != nil {
		return freeze(AdHocID, nil)
	}
	for _, ex := range plan.Selected {
		if err := freeze(ex.ID, ex.Tools); err != nil {
			return err
		}
	}
	return nil
}

// bindGitHub applies a --tool-bindings file to a run. The binding is used
// only when the file declares the bound tool and kmx.yaml leaves it
// Enabled; only then is its credential variable read, once, and refused
// when it is missing or empty or when its value is in the agent file or
// the input, all before the journal exists. The bound tool then answers
// live (ghread) whenever no recording of the example answers the call.
func bindGitHub(opts Options, req Request, plan *Plan) error {
	b := opts.ToolBinding
	if b == nil || plan.tools.settings.State(b.Name) != localtools.Enabled {
		return nil
	}
	texts := map[string]string{"the agent file": string(req.Source)}
	if plan.AdHoc != nil {
		texts["the input"] = *plan.AdHoc
	}
	token, err := b.Credential(opts.Getenv, texts)
	if err != nil {
		var be *localtools.BindingError
		if errors.As(err, &be) {
			step := be.Step
			if step == nil {
				step = problem.Plain(be.NextStep())
			}
			return RefuseIn(step, func(w problem.Words) string { return w(problem.ToolBindings, "") + " " + be.Error() }, "")
		}
		return fmt.Errorf("read the tool binding's credential: %w", err)
	}
	if err := ghread.CheckEndpoint(); err != nil {
		return Refuse(ghread.EndpointHint, "%s", err.Error())
	}
	version := opts.Version
	if version == "" {
		version = kmxversion.Version
	}
	plan.tools.github = &githubRead{name: b.Name, repository: b.Repository, token: token, version: version}
	plan.liveTools = plan.tools.github.call
	return nil
}

// bindEditorTools binds, on the editor route, each tool that kmx.yaml
// leaves Enabled to the tool VS Code itself would use for it (editorWants),
// before the journal exists, and makes it the live source of every
// example's tool set. A tool VS Code offers nothing for keeps its source
// (a recording, else the stub): never a refusal. Disabled tools are not
// bound: Disabled wins, and nothing is asked of VS Code for them.
func bindEditorTools(ctx context.Context, plan *Plan, rt *Routes) error {
	if rt.editor == nil || rt.Agent.Route != route.Editor {
		return nil
	}
	enabled := editorWants(plan)
	if len(enabled) == 0 {
		return nil
	}
	if g := plan.tools.github; g != nil {
		// One source per tool: the binding file's read is not mixed with
		// the tools VS Code offers.
		return Refuse(fmt.Sprintf("run on the fake model (--model fake) to use the binding file, or drop the binding so the tool VS Code offers as %s answers", g.name),
			"the tool binding file binds %s, but this run is on the editor route, where declared tools bind to the tools VS Code offers", g.name)
	}
	bound, err := rt.editor.bindTools(ctx, enabled)
	if err != nil {
		return err
	}
	for id, set := range plan.tools.sets {
		for i := range set {
			if set[i].State == localtools.Enabled && bound[set[i].FunctionName()] {
				set[i].Source = localtools.SourceLive
			}
		}
		plan.tools.sets[id] = set
	}
	plan.liveTools = rt.editor.invokeTool
	return nil
}

// editorWants is every Enabled tool of the run with the vscode.lm.tools
// names that implement it: for a tool of VS Code's reference table, the ids
// VS Code registers for it (vscode.lm.tools names a tool by its id, never by
// the reference name an agent file writes); for any other declared name,
// that exact name; an MCP stub has none (kmx knows no definition for it).
func editorWants(plan *Plan) []route.EditorToolWant {
	var out []route.EditorToolWant
	for _, t := range plan.tools.shape {
		if t.State != localtools.Enabled {
			continue
		}
		w := route.EditorToolWant{Function: t.FunctionName()}
		if vt, ok := vscodetools.Lookup(t.Name); ok && t.Table != "" {
			w.Names = append([]string{vt.ID}, vt.IDs...)
		} else if t.Table == "" {
			w.Names = []string{t.Name}
		}
		out = append(out, w)
	}
	return out
}

// checkToolRoute refuses, before anything is created or sent, a tool the
// route cannot offer (on an endpoint, a name that is not a valid function
// name) and a fake directive to call a tool that nothing would answer but
// the stub. The fake model, endpoints and the editor (whose tools
// bindEditorTools bound) all run the tool harness.
// src is the agent file's text, to place the refusal (Preflight) on the
// directive's line.
func checkToolRoute(plan *Plan, rt *Routes, src []byte) error {
	names := declared(plan.Agent)
	directive := ""
	if _, err := route.FakeAnswer(plan.Agent.Instructions, ""); err != nil {
		var ute *route.UnboundToolError
		if errors.As(err, &ute) {
			directive = ute.Tool
		}
		var we *route.WorkspaceEditError
		if errors.As(err, &we) && rt.Agent.Route == route.Fake {
			// Its three sends need the workspace harness: every example
			// the run sends must have a workspace.
			if id := withoutWorkspace(plan); id != "" {
				return refuseNear(&plan.Agent.InstructionsRange, "give every example `workspace: DIR` (or the file a first item `- workspace: DIR`), or remove the Replace directive",
					"the instructions ask the fake model to edit %q in a workspace, but %s has none", we.Path, id)
			}
		}
	}
	if len(names) == 0 {
		if directive != "" && rt.Agent.Route == route.Fake {
			return refuseNear(directiveAt(src, plan.Agent, directive), fmt.Sprintf("declare %q in the agent file's tools, add a recording for it to each example, and run again; or remove the directive", directive),
				"the instructions ask the fake model to call the tool %q, which the agent file does not declare", directive)
		}
		return nil
	}
	switch rt.Agent.Route {
	case route.Editor:
		return nil
	case route.Compatible:
		return checkFunctionNames(plan)
	case route.Fake:
	default:
		return refuseNear(&plan.Agent.Tools[0].Range, "run this agent on the fake model, an endpoint or a model VS Code offers, or remove its tools",
			"%s declares tools, and the route %q offers none: kmx never runs a declared tool's agent without its tools",
			plan.Agent.ID, rt.Agent.Route)
	}
	if directive == "" {
		return nil
	}
	// The directive may name the tool as the file declares it, by its
	// canonical or function name, or by a name standing for it (`fetch`
	// for `web/fetch` under `web`). A declared tool with no recording or
	// binding answers "not available in this test": never a refusal.
	if _, ok := localtools.Named(plan.tools.shape, directive); ok || plan.tools.shape == nil {
		return nil
	}
	return refuseNear(directiveAt(src, plan.Agent, directive), fmt.Sprintf("declare %q in the agent file's tools, or fix the name in the directive", directive),
		"the instructions ask the fake model to call the tool %q, which the agent file does not declare", directive)
}

// checkFunctionNames refuses, on an endpoint, a tool the harness would
// offer under a name the endpoint cannot accept as a function name
// (route.CheckFunctionName), placed on the declared tool.
func checkFunctionNames(plan *Plan) error {
	for _, set := range plan.tools.sets {
		for _, d := range harness.ToolDefs(set) {
			err := route.CheckFunctionName(d.Name)
			if err == nil {
				continue
			}
			var at *agentfile.Range
			for i := range plan.Agent.Tools {
				if plan.Agent.Tools[i].Name == d.Name {
					at = &plan.Agent.Tools[i].Range
				}
			}
			var ce *route.ConfigError
			if errors.As(err, &ce) {
				r := refuseNear(at, ce.Next, "%s", ce.Msg)
				r.step = ce.Step
				return r
			}
			return err
		}
	}
	return nil
}

// directiveAt is the line of the instructions' fake-model directive to
// call tool, when src (the agent file's text) holds it there.
func directiveAt(src []byte, a *agentfile.Agent, tool string) *agentfile.Range {
	r := a.InstructionsRange
	if r.Start.Offset < 0 || r.Start.Offset > r.End.Offset || r.End.Offset > len(src) {
		return nil
	}
	i := bytes.Index(src[r.Start.Offset:r.End.Offset], []byte(route.FakeToolDirective(tool)))
	if i < 0 {
		return nil
	}
	at := lineRange(bytes.SplitAfter(src, []byte("\n")), bytes.Count(src[:r.Start.Offset+i], []byte("\n")))
	return &at
}

// ToolSetting is one declared tool's kmx.yaml state, frozen at run start.
type ToolSetting struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// ToolSettings is every declared tool's kmx.yaml state frozen at run
// start (nil for a file that declares none): the report's toolSettings.
func (p *Plan) ToolSettings() []ToolSetting {
	if len(p.tools.settings.States) == 0 {
		return nil
	}
	out := make([]ToolSetting, 0, len(p.tools.settings.States))
	for _, st := range p.tools.settings.States {
		out = append(out, ToolSetting{Name: st.Name, State: st.State})
	}
	return out
}

// SettingsRevision is the frozen settings' digest (localtools.Settings
// .Revision): a result whose digest differs from today's kmx.yaml is out of
// date even when the agent file is unchanged.
func (p *Plan) SettingsRevision() string {
	return p.workspacesRevision(p.tools.settings.Revision())
}

// withoutWorkspace names the first input the run sends that has no
// workspace (an example, or the ad-hoc input), or "".
func withoutWorkspace(p *Plan) string {
	if p.AdHoc != nil {
		return "the ad-hoc input"
	}
	for _, ex := range p.Selected {
		if p.WorkspaceDir(ex.ID) == "" {
			return fmt.Sprintf("example %q", ex.ID)
		}
	}
	return ""
}

// Tools is example id's frozen tool set (AdHocID for the ad-hoc input);
// empty runs on the tool-free chat harness.
func (p *Plan) Tools(id string) []localtools.Tool {
	return p.tools.sets[id]
}

// LiveTools answers live-bound tools' calls: the --tool-bindings read, or
// the editor route's tool binding; else nil.
func (p *Plan) LiveTools() harness.LiveTools {
	return p.liveTools
}
