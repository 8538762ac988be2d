package lsp

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

// examples serves kmx/examples: the parsed examples of a document for the
// Test Explorer, from the open buffer (or the file on disk).
func (s *Server) examples(_ context.Context, p DocumentParams) (*ExamplesResult, error) {
	if p.URI == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: uri is required", MethodExamples)
	}
	snap, ok := s.docs.snapshot(p.URI)
	if !ok {
		src, err := s.source(MethodExamples, p.URI)
		if err != nil {
			return nil, err
		}
		snap = snapshot{uri: p.URI, text: src.text, version: src.version, parse: s.parseDoc}
	}
	res, version := snap.file(), snap.version
	out := &ExamplesResult{
		ProtocolVersion: ProtocolVersion,
		URI:             p.URI,
		DocumentVersion: version,
		State:           res.State.String(),
		Examples:        []ExampleInfo{},
		Tools:           ToolSettings{States: []ToolState{}},
	}
	a := res.Agent
	if a == nil {
		return out, nil
	}
	out.AgentID, out.AgentName, out.Revision, out.ExamplesHeading = a.ID, a.DisplayName(), a.Revision, a.ExamplesHeading
	out.Tools = readToolSettings(uriPath(p.URI), a.Tools)
	if a.ExamplesFile != "" {
		out.ExamplesURI = p.URI
		if !isExamplesURI(p.URI) {
			out.ExamplesURI = partnerURI(p.URI)
		}
	}
	for _, ex := range a.Examples {
		info := ExampleInfo{ID: ex.ID, Range: ex.Range, FullRange: ex.FullRange, Assertions: []AssertionSummary{}}
		info.Assertions = summaries(ex.Assertions)
		for i, t := range ex.Turns {
			info.Turns = append(info.Turns, TurnInfo{Turn: i + 1, Label: turnLabel(i+1, t.Input), Range: t.Range, Assertions: summaries(t.Assertions)})
		}
		out.Examples = append(out.Examples, info)
	}
	return out, nil
}

func summaries(as []agentfile.Assertion) []AssertionSummary {
	out := []AssertionSummary{}
	for _, a := range as {
		out = append(out, AssertionSummary{Index: a.Index, Type: string(a.Type), Summary: summarize(a), Range: a.Range})
	}
	return out
}

// turnLabel is a turn's Test Explorer label: "turn 2: " and the first
// words of its input, whitespace folded to single spaces, cut at a word
// boundary when it can be.
func turnLabel(n int, input string) string {
	words := strings.Join(strings.Fields(input), " ")
	if r := []rune(words); len(r) > TurnLabelRunes {
		head := string(r[:TurnLabelRunes-1])
		if i := strings.LastIndexByte(head, ' '); i > TurnLabelRunes/2 {
			head = head[:i]
		}
		words = head + "…"
	}
	if words == "" {
		return fmt.Sprintf("turn %d", n)
	}
	return fmt.Sprintf("turn %d: %s", n, words)
}

// summarize describes an assertion in one short line. Operands are the
// author's own text from the buffer (credential shapes there are already
// refused by the parser), cut to keep the Test Explorer readable.
func summarize(a agentfile.Assertion) string {
	op := a.Operands()
	switch a.Type {
	case agentfile.LLMJudge:
		s := "llmJudge " + strconv.Quote(cut(op.Rubric, 60))
		if op.JudgeModel != "" {
			s += " by " + op.JudgeModel
		}
		if op.Threshold != nil {
			s += fmt.Sprintf(" ≥ %d", *op.Threshold)
		}
		return s
	case agentfile.ToolCalled, agentfile.ToolNotCalled, agentfile.FileUnchanged:
		return string(a.Type) + " " + a.Value + op.Path
	case agentfile.FilesChanged:
		return string(a.Type) + " [" + cut(strings.Join(op.Paths, ", "), 60) + "]"
	case agentfile.FileContains, agentfile.FileNotContains, agentfile.FileMatches:
		return string(a.Type) + " " + op.Path + " " + strconv.Quote(cut(a.Value, 60))
	case agentfile.ToolCalledWith:
		return "toolCalledWith " + a.Value + " " + cut(op.Arguments, 60)
	case agentfile.ToolOrder:
		return "toolOrder " + strings.Join(op.Names, " → ")
	case agentfile.NoOtherTools:
		return "noOtherTools: only " + strings.Join(op.Names, ", ")
	case agentfile.ToolCalls:
		s := "toolCalls"
		if op.Min != nil {
			s += fmt.Sprintf(" ≥ %d", *op.Min)
		}
		if op.Max != nil {
			s += fmt.Sprintf(" ≤ %d", *op.Max)
		}
		return s
	case agentfile.MaxLatencyMs:
		return fmt.Sprintf("maxLatencyMs %d", op.Limit)
	case agentfile.MaxTokens:
		return fmt.Sprintf("maxTokens %d", op.Limit)
	}
	return string(a.Type) + " " + strconv.Quote(cut(a.Value, 60))
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
