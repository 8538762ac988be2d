package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
	"github.com/kmxdev/kmx/sidecar/internal/vscodetools"
)

// ToolUse is one call of a replay-verified tool trace: the model requested
// Name with Arguments (JSON text) in a validated batch, and Source answered
// it (live, recorded, unavailable or disabled). It is the one Go shape of a
// tool use: the runner converts the Sessions service's sessionspb.ToolUse to
// it at that edge, and reports and tool assertions read it.
type ToolUse struct {
	Name      string `json:"name"`
	Source    string `json:"source"`
	Arguments string `json:"arguments,omitempty"`
	// Reference is the declared reference that brought the tool in (the
	// set edit for edit/editFiles).
	Reference string `json:"-"`
	// Dispatched: an Enabled dispatch (counted in a report's toolCalls); a
	// Disabled answer is not one. Tool assertions count every use.
	Dispatched bool `json:"dispatched,omitempty"`
}

// Covers reports whether a tool name as the agent file writes it (in an
// assertion) covers the call u: the tool (edit/editFiles, or its legacy
// editFiles), the declared reference that brought it in (an MCP server's
// `server/*` for a call of a tool the file does not list on its own), or a
// set standing for it (edit).
func Covers(listed string, u ToolUse) bool {
	return listed == u.Name || (u.Reference != "" && listed == u.Reference) || vscodetools.Covers(listed, u.Name)
}

// EvaluateTool judges a trajectory assertion (toolCalled, toolNotCalled,
// toolCalledWith, toolOrder, toolCalls, noOtherTools) against the tool
// trace of a turn that ran on the tool harness and was replay-verified; the
// runner never calls it with any other trace. Called means requested in a
// validated batch, whatever answered it (a Disabled tool's call included);
// uses are in the order the model requested them.
func EvaluateTool(a agentfile.Assertion, uses []ToolUse) AssertionResult {
	op := a.Operands()
	r := AssertionResult{Index: a.Index, Type: a.Type, Expected: a.Value}
	switch a.Type {
	case agentfile.ToolCalled, agentfile.ToolNotCalled:
		// toolCalled passes when the model called it, toolNotCalled when
		// it did not; the message says which happened either way.
		var sources []string
		for _, u := range uses {
			if Covers(a.Value, u) {
				sources = append(sources, u.Source)
			}
		}
		called := len(sources) > 0
		r.Outcome = Fail
		if called == (a.Type == agentfile.ToolCalled) {
			r.Outcome = Pass
		}
		r.Message = fmt.Sprintf("the model did not call %s", a.Value)
		if called {
			r.Message = fmt.Sprintf("the model called %s (%s)", a.Value, strings.Join(sources, ", "))
		}
	case agentfile.ToolCalledWith:
		return calledWith(r, a, uses)
	case agentfile.ToolOrder:
		return order(r, a, uses)
	case agentfile.ToolCalls:
		return callCount(r, a, uses)
	case agentfile.NoOtherTools:
		r.Expected = strings.Join(op.Names, ", ")
		var others []string
		for _, u := range uses {
			if !coveredByAny(op.Names, u) {
				others = append(others, u.Name)
			}
		}
		if len(op.Names) == 0 {
			r.Outcome, r.Message = Unknown, "noOtherTools lists no tool; name the allowed tools with toolCalled, toolCalledWith or toolOrder"
			return r
		}
		if len(others) > 0 {
			r.Outcome = Fail
			r.Message = fmt.Sprintf("the model called %s, outside %s", strings.Join(others, ", "), r.Expected)
			r.Actual = trajectory(uses)
			return r
		}
		r.Outcome = Pass
		r.Message = fmt.Sprintf("every call (%d) was of %s", len(uses), r.Expected)
	default:
		r.Outcome = Unknown
		r.Message = fmt.Sprintf("%s is not a tool assertion", a.Type)
	}
	return r
}

func coveredByAny(listed []string, u ToolUse) bool {
	for _, l := range listed {
		if Covers(l, u) {
			return true
		}
	}
	return false
}

// trajectory names the calls in order, for a failure's evidence.
func trajectory(uses []ToolUse) string {
	if len(uses) == 0 {
		return "no tool calls"
	}
	names := make([]string, len(uses))
	for i, u := range uses {
		names[i] = u.Name
	}
	return excerpt(strings.Join(names, " → "), 0)
}

// calledWith passes when at least one call of a tool the name covers has
// arguments that contain the expected ones (ArgumentsMatch).
func calledWith(r AssertionResult, a agentfile.Assertion, uses []ToolUse) AssertionResult {
	op := a.Operands()
	r.Expected = a.Value + " " + op.Arguments
	var want any
	if err := decodeJSON(op.Arguments, &want); err != nil {
		r.Outcome, r.Message = Unknown, "the expected arguments are not JSON; fix the assertion's arguments: "+err.Error()
		return r
	}
	calls, malformed := 0, 0
	for _, u := range uses {
		if !Covers(a.Value, u) {
			continue
		}
		calls++
		var got any
		if err := decodeJSON(u.Arguments, &got); err != nil {
			malformed++
			continue
		}
		if ArgumentsMatch(want, got) {
			r.Outcome = Pass
			r.Message = fmt.Sprintf("the model called %s with matching arguments (%s)", a.Value, u.Source)
			return r
		}
		if r.Actual == "" {
			r.Actual = shownArguments(u.Arguments)
		}
	}
	switch {
	case calls == 0:
		r.Outcome, r.Message = Fail, fmt.Sprintf("the model did not call %s", a.Value)
	case malformed > 0:
		// A call whose arguments cannot be read might have matched.
		r.Outcome, r.Message = Unknown, fmt.Sprintf("%d of the %d calls of %s have arguments that are not JSON, and none of the others match", malformed, calls, a.Value)
	case calls == 1:
		r.Outcome, r.Message = Fail, fmt.Sprintf("the model called %s once, with arguments that do not contain the expected ones", a.Value)
	default:
		r.Outcome, r.Message = Fail, fmt.Sprintf("the model called %s %d times, never with arguments that contain the expected ones", a.Value, calls)
	}
	return r
}

// shownArguments is a call's arguments as evidence: an excerpt, never a
// credential shape (the model wrote them, nothing checked them for one).
func shownArguments(args string) string {
	if len(secrets.Scan(args)) > 0 {
		return "(arguments holding a credential-shaped value)"
	}
	return excerpt(args, 0)
}

// ArgumentsMatch is toolCalledWith's JSON subset match: an expected object
// matches an object holding each of its keys with a matching value (other
// keys may be present); an expected array matches an array of the same
// length whose elements match in order; any other value matches an equal
// one (numbers by value: 1 and 1.0 are equal).
func ArgumentsMatch(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !ArgumentsMatch(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !ArgumentsMatch(w[i], g[i]) {
				return false
			}
		}
		return true
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return false
		}
		if w == g {
			return true
		}
		wf, err1 := strconv.ParseFloat(string(w), 64)
		gf, err2 := strconv.ParseFloat(string(g), 64)
		return err1 == nil && err2 == nil && wf == gf
	default:
		return want == got
	}
}

// decodeJSON decodes one JSON value keeping numbers exact.
func decodeJSON(text string, v *any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// order passes when the calls, in the order the model requested them,
// hold calls of the names in the assertion's order (others may come
// between): the names are a subsequence of the trajectory.
func order(r AssertionResult, a agentfile.Assertion, uses []ToolUse) AssertionResult {
	op := a.Operands()
	r.Expected = strings.Join(op.Names, " → ")
	if len(op.Names) == 0 {
		r.Outcome, r.Message = Unknown, "toolOrder names no tool"
		return r
	}
	next := 0
	for _, u := range uses {
		if next < len(op.Names) && Covers(op.Names[next], u) {
			next++
		}
	}
	if next == len(op.Names) {
		r.Outcome, r.Message = Pass, "the model called "+r.Expected+" in this order"
		return r
	}
	r.Outcome = Fail
	r.Actual = trajectory(uses)
	if next == 0 {
		r.Message = fmt.Sprintf("the model never called %s (the first of the order)", op.Names[0])
	} else {
		r.Message = fmt.Sprintf("the model called %s in order, then no %s", strings.Join(op.Names[:next], " → "), op.Names[next])
	}
	return r
}

// callCount checks the number of calls against toolCalls' bounds.
func callCount(r AssertionResult, a agentfile.Assertion, uses []ToolUse) AssertionResult {
	op := a.Operands()
	var bounds []string
	last := 0
	if op.Min != nil {
		bounds = append(bounds, fmt.Sprintf("at least %d", *op.Min))
		last = *op.Min
	}
	if op.Max != nil {
		bounds = append(bounds, fmt.Sprintf("at most %d", *op.Max))
		last = *op.Max
	}
	if len(bounds) == 0 {
		r.Outcome, r.Message = Unknown, "toolCalls has no bound; give it min or max"
		return r
	}
	r.Expected = strings.Join(bounds, " and ") + " " + calls(last)
	n := len(uses)
	r.Actual = strconv.Itoa(n)
	if (op.Min != nil && n < *op.Min) || (op.Max != nil && n > *op.Max) {
		r.Outcome = Fail
		r.Message = fmt.Sprintf("the model made %d tool %s; the bound is %s", n, calls(n), r.Expected)
		return r
	}
	r.Outcome = Pass
	r.Message = fmt.Sprintf("the model made %d tool %s, %s", n, calls(n), r.Expected)
	return r
}

// calls is "call" or "calls", as n needs.
func calls(n int) string {
	if n == 1 {
		return "call"
	}
	return "calls"
}

// Measures are what the journal says about one turn, for the budgets. A
// nil field was not journaled: the route reported no usage, or the turn
// was journaled by a kmx that did not record it.
type Measures struct {
	// DurationMs is the turn's journaled duration.
	DurationMs *float64
	// TotalTokens is the agent's total token usage over the turn's model
	// sends (the judge's is not counted).
	TotalTokens *int
}

// EvaluateBudget judges maxLatencyMs and maxTokens against a verified
// turn's journaled measures. A measure the journal does not hold is
// unknown, never a pass.
func EvaluateBudget(a agentfile.Assertion, m Measures) AssertionResult {
	op := a.Operands()
	r := AssertionResult{Index: a.Index, Type: a.Type}
	switch a.Type {
	case agentfile.MaxLatencyMs:
		r.Expected = fmt.Sprintf("at most %d ms", op.Limit)
		if m.DurationMs == nil {
			r.Outcome, r.Message = Unknown, "the journal holds no duration for this turn"
			return r
		}
		r.Actual = strconv.FormatFloat(*m.DurationMs, 'f', 1, 64) + " ms"
		r.Outcome, r.Message = Pass, fmt.Sprintf("the turn took %s, within %d ms", r.Actual, op.Limit)
		if *m.DurationMs > float64(op.Limit) {
			r.Outcome, r.Message = Fail, fmt.Sprintf("the turn took %s, over the budget of %d ms", r.Actual, op.Limit)
		}
	case agentfile.MaxTokens:
		r.Expected = fmt.Sprintf("at most %d tokens", op.Limit)
		if m.TotalTokens == nil {
			r.Outcome, r.Message = Unknown, "the route reported no token usage for this turn, so the budget cannot be checked"
			return r
		}
		r.Actual = fmt.Sprintf("%d tokens", *m.TotalTokens) // as Expected and the latency's "26.0 ms" say it
		r.Outcome, r.Message = Pass, fmt.Sprintf("the turn used %d tokens, within %d", *m.TotalTokens, op.Limit)
		if *m.TotalTokens > op.Limit {
			r.Outcome, r.Message = Fail, fmt.Sprintf("the turn used %d tokens, over the budget of %d", *m.TotalTokens, op.Limit)
		}
	default:
		r.Outcome, r.Message = Unknown, fmt.Sprintf("%s is not a budget", a.Type)
	}
	return r
}
