// Package judge owns how one example's answer is judged: the deterministic
// assertions (contains, notContains, regex), the two-sample llmJudge with its
// fixed prompt and strict reply format, the fake judge, and the example
// verdict computed from assertion results.
//
// It never sends a request itself, never opens a journal and never chooses a
// route: judge samples go through a Sampler the runner provides (each sample
// in a fresh tool-free Session). It never turns doubt into a pass: a
// malformed, unavailable, split or inconclusive judgment is unknown.
package judge

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

// Outcome is the result of one assertion or one example.
type Outcome string

// Outcomes. This package produces Pass, Fail and Unknown; Refused is the
// runner's (an example refused before anything was sent) and is named here so
// every front shares one vocabulary.
const (
	Pass    Outcome = "pass"
	Fail    Outcome = "fail"
	Unknown Outcome = "unknown"
	Refused Outcome = "refused"
)

// DefaultThreshold is the llmJudge pass mark when the assertion sets none:
// both samples must score at least this much.
const DefaultThreshold = 70

// Samples is how many judge samples one llmJudge assertion takes.
const Samples = 2

// MaxActualRunes bounds how much of an answer a result quotes back.
const MaxActualRunes = 200

// Sampler sends one judge sample and returns the judge's raw reply text. The
// runner implements it by running a fresh tool-free Session on the judge
// route, so each sample is journaled; judgeModel is the assertion's authored
// judge model ("" when omitted: the runner picks the route's model).
// An error means the sample was unavailable (refused, failed or canceled).
//
// The samples of one assertion are requested at the same time, each from its
// own goroutine, so a Sampler must be safe for concurrent use. prev is
// closed once the sample before this one has returned (nil for the first
// sample): a Sampler that bounds how much runs at once may send this sample
// only then, in the earlier one's place, so that with no room to spare the
// samples go one after the other, in order. When one sample fails, ctx of
// the others is cancelled: a sample not yet sent must not be sent.
type Sampler interface {
	Sample(ctx context.Context, prev <-chan struct{}, judgeModel, instructions, input string) (reply string, err error)
}

// AssertionResult is the outcome of one assertion.
type AssertionResult struct {
	// Index is the assertion's zero-based position in the example's list.
	Index   int                     `json:"index"`
	Type    agentfile.AssertionType `json:"type"`
	Outcome Outcome                 `json:"outcome"`
	// Expected is the operand (contains, notContains), the pattern (regex)
	// or the pass mark (llmJudge).
	Expected string `json:"expected,omitempty"`
	// Actual is evidence: an excerpt of the answer of at most
	// MaxActualRunes runes for a failed text check, or the sample scores for
	// llmJudge. Never the answer in full.
	Actual string `json:"actual,omitempty"`
	// Message says briefly why the outcome is what it is.
	Message string `json:"message"`
	// Threshold and Scores belong to llmJudge. A nil score is a sample that
	// was inconclusive, malformed, unavailable or not sent.
	Threshold *int   `json:"threshold,omitempty"`
	Scores    []*int `json:"scores,omitempty"`
	// Abort is set when a judge sample was malformed or unavailable: the
	// runner must not send anything further in this invocation.
	Abort bool `json:"abort,omitempty"`
}

// Evaluate judges one assertion against an answer. input is the example's
// input (the judge sees it; the text checks do not). s is used only for
// llmJudge and may be nil otherwise. Evaluate never panics on bad input: an
// assertion it cannot decide is Unknown with a message saying what to change.
func Evaluate(ctx context.Context, a agentfile.Assertion, input, answer string, s Sampler) AssertionResult {
	r := AssertionResult{Index: a.Index, Type: a.Type}
	switch a.Type {
	case agentfile.Contains, agentfile.NotContains, agentfile.Regex:
		return evalText(r, a, answer)
	case agentfile.LLMJudge:
		return evalLLMJudge(ctx, r, a, input, answer, s)
	}
	switch {
	case a.Type.IsTrajectory():
		r.Outcome = Unknown
		r.Message = fmt.Sprintf("%s is judged from a replay-verified tool trace only, not from an answer; bind the tool or remove the assertion", a.Type)
		return r
	case a.Type.IsBudget():
		r.Outcome = Unknown
		r.Message = fmt.Sprintf("%s is judged from the turn's journaled measures only, not from an answer", a.Type)
		return r
	}
	r.Outcome = Unknown
	r.Message = fmt.Sprintf("unsupported assertion type %q; use contains, notContains, regex or llmJudge", string(a.Type))
	return r
}

func evalText(r AssertionResult, a agentfile.Assertion, answer string) AssertionResult {
	r.Expected = a.Value
	if a.Value == "" {
		// An empty operand decides nothing (it is in every answer), and a
		// pass that checked nothing would be a pass by default.
		r.Outcome = Unknown
		r.Message = fmt.Sprintf("%s has an empty value; give it the text to look for", a.Type)
		return r
	}
	switch a.Type {
	case agentfile.Contains:
		if strings.Contains(answer, a.Value) {
			r.Outcome, r.Message = Pass, "the answer contains the expected text"
			return r
		}
		r.Outcome, r.Message = Fail, "the answer does not contain the expected text"
		r.Actual = excerpt(answer, 0)
	case agentfile.NotContains:
		at := strings.Index(answer, a.Value)
		if at < 0 {
			r.Outcome, r.Message = Pass, "the answer does not contain the forbidden text"
			return r
		}
		r.Outcome, r.Message = Fail, "the answer contains the forbidden text"
		r.Actual = excerpt(answer, at)
	case agentfile.Regex:
		re, err := regexp.Compile(a.Value)
		if err != nil {
			// The parser refuses invalid patterns, so this is a broken
			// invariant reported as unknown, never a fail or a panic.
			r.Outcome = Unknown
			r.Message = "the pattern is not valid RE2 syntax; fix it (see https://github.com/google/re2/wiki/Syntax): " + err.Error()
			return r
		}
		if re.MatchString(answer) {
			r.Outcome, r.Message = Pass, "the answer matches the pattern"
			return r
		}
		r.Outcome, r.Message = Fail, "the answer does not match the pattern"
		r.Actual = excerpt(answer, 0)
	}
	return r
}

func evalLLMJudge(ctx context.Context, r AssertionResult, a agentfile.Assertion, input, answer string, s Sampler) AssertionResult {
	op := a.Operands()
	threshold := DefaultThreshold
	if op.Threshold != nil {
		threshold = *op.Threshold
	}
	r.Threshold = &threshold
	r.Expected = "score >= " + strconv.Itoa(threshold) + " from both samples"
	r.Outcome = Unknown
	switch {
	case threshold < 0 || threshold > 100:
		r.Message = fmt.Sprintf("threshold %d is outside 0 to 100; set a threshold from 0 to 100 or omit it for %d", threshold, DefaultThreshold)
		return r
	case strings.TrimSpace(op.Rubric) == "":
		r.Message = "llmJudge has an empty rubric; describe what a good answer must do"
		return r
	case s == nil:
		r.Message = "no judge is available for llmJudge; run with a judge route"
		return r
	}
	user, err := Payload(op.Rubric, input, answer)
	if err != nil {
		r.Message = err.Error()
		return r
	}
	if err := ctx.Err(); err != nil {
		r.Abort = true
		r.Scores = make([]*int, Samples)
		r.Actual = scoresText(r.Scores)
		r.Message = fmt.Sprintf("judge sample 1 of %d was not sent: %v", Samples, err)
		return r
	}
	scores, failure := sampleAll(ctx, op.JudgeModel, user, s)
	r.Scores = scores
	if failure != "" {
		r.Abort = true
		r.Actual = scoresText(r.Scores)
		r.Message = failure
		return r
	}
	inconclusive := false
	for _, sc := range r.Scores {
		if sc == nil {
			inconclusive = true
		}
	}
	r.Actual = scoresText(r.Scores)
	if inconclusive {
		r.Message = inconclusiveText(r.Scores)
		return r
	}
	passed := 0
	for _, sc := range r.Scores {
		if *sc >= threshold {
			passed++
		}
	}
	switch passed {
	case Samples:
		r.Outcome, r.Message = Pass, fmt.Sprintf("both judge samples scored at least %d", threshold)
	case 0:
		r.Outcome, r.Message = Fail, fmt.Sprintf("both judge samples scored below %d", threshold)
	default:
		r.Message = fmt.Sprintf("the judges disagree: one sample scored at least %d and one below, so this is unknown, neither a pass nor a fail; make the rubric more decisive", threshold)
	}
	return r
}

// sampleAll requests every judge sample of one assertion at once and returns
// their scores in sample order. The first sample to fail (unavailable, or a
// reply that is not the strict format) cancels the others and its text is
// the failure; a sample that was cancelled because of it is not the cause.
func sampleAll(ctx context.Context, judgeModel, user string, s Sampler) ([]*int, string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	scores := make([]*int, Samples)
	var mu sync.Mutex
	failure := ""
	fail := func(msg string) {
		mu.Lock()
		if failure == "" {
			failure = msg
		}
		mu.Unlock()
		cancel()
	}
	ended := make([]chan struct{}, Samples)
	var wg sync.WaitGroup
	for i := range Samples {
		ended[i] = make(chan struct{})
		var prev <-chan struct{}
		if i > 0 {
			prev = ended[i-1]
		}
		wg.Go(func() {
			defer close(ended[i])
			reply, err := s.Sample(ctx, prev, judgeModel, Instructions, user)
			if err != nil {
				fail(fmt.Sprintf("judge sample %d of %d was unavailable: %v", i+1, Samples, err))
				return
			}
			parsed, err := ParseReply(reply)
			if err != nil {
				fail(fmt.Sprintf("judge sample %d of %d: %v", i+1, Samples, err))
				return
			}
			scores[i] = parsed.Score
		})
	}
	wg.Wait()
	return scores, failure
}

// inconclusiveText says in words why a judged assertion with a null score
// is unknown.
func inconclusiveText(scores []*int) string {
	var none []string
	for i, sc := range scores {
		if sc == nil {
			none = append(none, strconv.Itoa(i+1))
		}
	}
	who := "judge sample " + strings.Join(none, " and ") + " of " + strconv.Itoa(len(scores)) + " gave no score"
	if len(none) == len(scores) {
		who = "no judge sample gave a score"
	}
	return who + " (the judge said the rubric cannot be applied to this answer), so this is inconclusive: unknown, not a pass; make the rubric one the judge can apply"
}

// scoresText renders sample scores for Actual: "scores 100, 40"; a sample
// with no score shows as "none".
func scoresText(scores []*int) string {
	parts := make([]string, len(scores))
	for i, sc := range scores {
		if sc == nil {
			parts[i] = "none"
		} else {
			parts[i] = strconv.Itoa(*sc)
		}
	}
	return "scores " + strings.Join(parts, ", ")
}

// excerpt returns at most MaxActualRunes runes of answer starting a little
// before byte offset at, with "…" marking each cut, so a failed check shows
// the relevant part of the answer without quoting it in full.
func excerpt(answer string, at int) string {
	const lead = 40
	runes := []rune(answer)
	start := utf8.RuneCountInString(answer[:at]) - lead
	if start < 0 {
		start = 0
	}
	end := start + MaxActualRunes
	if end > len(runes) {
		end = len(runes)
		if start = end - MaxActualRunes; start < 0 {
			start = 0
		}
	}
	out := string(runes[start:end])
	if start > 0 {
		out = "…" + out
	}
	if end < len(runes) {
		out += "…"
	}
	return out
}

// ExampleVerdict is one example's outcome from its assertion results.
type ExampleVerdict struct {
	Outcome Outcome `json:"outcome"`
	Message string  `json:"message"`
}

// Verdict combines an example's assertion results: fail if any failed, else
// unknown if any is unknown, else pass. No assertions is unknown, because
// nothing was checked. The runner adds refused, and overrides the verdict
// with unknown when the turn did not replay-verify.
func Verdict(results []AssertionResult) ExampleVerdict {
	if len(results) == 0 {
		return ExampleVerdict{Outcome: Unknown,
			Message: "no assertions were checked; add an assert list to this example to make it a test"}
	}
	var failed, unknown []string
	for _, r := range results {
		switch r.Outcome {
		case Pass:
		case Fail:
			failed = append(failed, "#"+strconv.Itoa(r.Index+1))
		default:
			// Anything that is not an explicit pass or fail is doubt.
			unknown = append(unknown, "#"+strconv.Itoa(r.Index+1))
		}
	}
	switch {
	case len(failed) > 0:
		return ExampleVerdict{Outcome: Fail, Message: fmt.Sprintf("%d of %d assertions failed (%s)",
			len(failed), len(results), strings.Join(failed, ", "))}
	case len(unknown) > 0:
		return ExampleVerdict{Outcome: Unknown, Message: fmt.Sprintf("no assertion failed, but %d of %d could not be decided (%s)",
			len(unknown), len(results), strings.Join(unknown, ", "))}
	}
	if len(results) == 1 {
		return ExampleVerdict{Outcome: Pass, Message: "the assertion passed"}
	}
	return ExampleVerdict{Outcome: Pass, Message: fmt.Sprintf("all %d assertions passed", len(results))}
}
