package judge

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

func intp(n int) *int { return &n }

func TestEvaluateTextAssertions(t *testing.T) {
	long := strings.Repeat("x", 500) + "NEEDLE" + strings.Repeat("y", 500)
	tests := []struct {
		name       string
		a          agentfile.Assertion
		answer     string
		want       Outcome
		wantActual bool // a failed check carries an excerpt of the answer
	}{
		{"contains pass", agentfile.Assertion{Type: agentfile.Contains, Value: "world"}, "hello world", Pass, false},
		{"contains fail", agentfile.Assertion{Type: agentfile.Contains, Value: "World"}, "hello world", Fail, true},
		{"contains empty value is unknown", agentfile.Assertion{Type: agentfile.Contains, Value: ""}, "hello", Unknown, false},
		{"notContains pass", agentfile.Assertion{Type: agentfile.NotContains, Value: "secret"}, "hello", Pass, false},
		{"notContains fail", agentfile.Assertion{Type: agentfile.NotContains, Value: "NEEDLE"}, long, Fail, true},
		{"notContains empty value is unknown", agentfile.Assertion{Type: agentfile.NotContains}, "hello", Unknown, false},
		{"regex match anywhere", agentfile.Assertion{Type: agentfile.Regex, Value: `\d{3}`}, "call 555 now", Pass, false},
		{"regex anchored fail", agentfile.Assertion{Type: agentfile.Regex, Value: `^\d+$`}, "call 555 now", Fail, true},
		{"regex invalid is unknown", agentfile.Assertion{Type: agentfile.Regex, Value: `(`}, "(", Unknown, false},
		{"regex empty is unknown", agentfile.Assertion{Type: agentfile.Regex}, "x", Unknown, false},
		{"toolCalled is unknown on tool-free path", agentfile.Assertion{Type: agentfile.ToolCalled, Value: "t"}, "x", Unknown, false},
		{"unsupported type is unknown", agentfile.Assertion{Type: "equals", Value: "x"}, "x", Unknown, false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.a.Index = i
			got := Evaluate(context.Background(), tc.a, "input", tc.answer, nil)
			if got.Outcome != tc.want {
				t.Fatalf("Outcome = %q (%s), want %q", got.Outcome, got.Message, tc.want)
			}
			if got.Index != i || got.Type != tc.a.Type {
				t.Fatalf("Index/Type = %d/%q, want %d/%q", got.Index, got.Type, i, tc.a.Type)
			}
			if got.Message == "" {
				t.Fatal("Message is empty")
			}
			if (got.Actual != "") != tc.wantActual {
				t.Fatalf("Actual = %q, want present=%v", got.Actual, tc.wantActual)
			}
			if n := len([]rune(strings.Trim(got.Actual, "…"))); n > MaxActualRunes {
				t.Fatalf("Actual has %d runes, want at most %d", n, MaxActualRunes)
			}
			if got.Abort {
				t.Fatal("a text assertion must never abort")
			}
		})
	}
}

func TestExcerptShowsTheForbiddenText(t *testing.T) {
	long := strings.Repeat("x", 500) + "NEEDLE" + strings.Repeat("y", 500)
	got := Evaluate(context.Background(), agentfile.Assertion{Type: agentfile.NotContains, Value: "NEEDLE"}, "", long, nil)
	if !strings.Contains(got.Actual, "NEEDLE") || !strings.HasPrefix(got.Actual, "…") || !strings.HasSuffix(got.Actual, "…") {
		t.Fatalf("Actual = %q, want an excerpt around NEEDLE cut on both sides", got.Actual)
	}
	short := excerpt("héllo", 0)
	if short != "héllo" {
		t.Fatalf("excerpt of a short answer = %q, want it whole", short)
	}
}

// scripted is a Sampler that replays fixed replies or errors and records
// what it was sent.
type scripted struct {
	replies []string
	errs    []error
	calls   int
	models  []string
	users   []string
	systems []string
}

// Sample sends one sample at a time, in order, as a runner at concurrency
// 1 does: it waits for the sample before it, and sends nothing once the
// assertion's context has ended.
func (s *scripted) Sample(ctx context.Context, prev <-chan struct{}, judgeModel, instructions, input string) (string, error) {
	if prev != nil {
		<-prev
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	i := s.calls
	s.calls++
	s.models = append(s.models, judgeModel)
	s.systems = append(s.systems, instructions)
	s.users = append(s.users, input)
	if i < len(s.errs) && s.errs[i] != nil {
		return "", s.errs[i]
	}
	if i >= len(s.replies) {
		return "", errors.New("scripted sampler: no reply left")
	}
	return s.replies[i], nil
}

func TestEvaluateLLMJudgeAggregation(t *testing.T) {
	const (
		r100  = `{"score": 100, "reasoning": "good"}`
		r70   = `{"score": 70, "reasoning": "enough"}`
		r69   = `{"score": 69, "reasoning": "close"}`
		r0    = `{"score": 0, "reasoning": "bad"}`
		rNull = `{"score": null, "reasoning": "cannot tell"}`
		rBad  = `{"score": 100, "reasoning": "good", "extra": 1}`
	)
	unavailable := errors.New("route: endpoint unreachable")
	tests := []struct {
		name      string
		threshold *int
		rubric    string
		replies   []string
		errs      []error
		want      Outcome
		wantAbort bool
		wantCalls int
		wantMsg   string
		wantAct   string
	}{
		{"both pass", nil, "r", []string{r100, r70}, nil, Pass, false, 2, "at least 70", "scores 100, 70"},
		{"both fail", nil, "r", []string{r69, r0}, nil, Fail, false, 2, "below 70", "scores 69, 0"},
		{"split", nil, "r", []string{r100, r0}, nil, Unknown, false, 2, "the judges disagree", "scores 100, 0"},
		{"split other order", nil, "r", []string{r0, r100}, nil, Unknown, false, 2, "the judges disagree", "scores 0, 100"},
		{"authored threshold", intp(90), "r", []string{r100, r70}, nil, Unknown, false, 2, "the judges disagree", "scores 100, 70"},
		{"threshold zero passes zero", intp(0), "r", []string{r0, r0}, nil, Pass, false, 2, "at least 0", "scores 0, 0"},
		{"first inconclusive", nil, "r", []string{rNull, r100}, nil, Unknown, false, 2, "judge sample 1 of 2 gave no score", "scores none, 100"},
		{"both inconclusive", nil, "r", []string{rNull, rNull}, nil, Unknown, false, 2, "no judge sample gave a score", "scores none, none"},
		{"first malformed aborts", nil, "r", []string{rBad, r100}, nil, Unknown, true, 1, "malformed judge reply", "scores none, none"},
		{"second malformed aborts", nil, "r", []string{r100, "not json"}, nil, Unknown, true, 2, "sample 2 of 2", "scores 100, none"},
		{"first unavailable aborts", nil, "r", nil, []error{unavailable}, Unknown, true, 1, "unavailable: route: endpoint unreachable", "scores none, none"},
		{"second unavailable aborts", nil, "r", []string{r100}, []error{nil, unavailable}, Unknown, true, 2, "sample 2 of 2 was unavailable", "scores 100, none"},
		{"threshold out of range", intp(101), "r", nil, nil, Unknown, false, 0, "outside 0 to 100", ""},
		{"empty rubric", nil, "  ", nil, nil, Unknown, false, 0, "empty rubric", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{replies: tc.replies, errs: tc.errs}
			a := agentfile.Assertion{Index: 3, Type: agentfile.LLMJudge}.With(agentfile.Operands{Rubric: tc.rubric, JudgeModel: "judge-x", Threshold: tc.threshold})
			got := Evaluate(context.Background(), a, "the input", "the answer", s)
			if got.Outcome != tc.want || got.Abort != tc.wantAbort {
				t.Fatalf("Outcome/Abort = %q/%v (%s), want %q/%v", got.Outcome, got.Abort, got.Message, tc.want, tc.wantAbort)
			}
			if s.calls != tc.wantCalls {
				t.Fatalf("sampler calls = %d, want %d", s.calls, tc.wantCalls)
			}
			if !strings.Contains(got.Message, tc.wantMsg) {
				t.Fatalf("Message = %q, want it to contain %q", got.Message, tc.wantMsg)
			}
			if got.Actual != tc.wantAct {
				t.Fatalf("Actual = %q, want %q", got.Actual, tc.wantAct)
			}
			if got.Threshold == nil {
				t.Fatal("Threshold is nil")
			}
			for i := range s.calls {
				if s.models[i] != "judge-x" || s.systems[i] != Instructions {
					t.Fatalf("sample %d sent model %q / other instructions", i, s.models[i])
				}
				want, _ := Payload(tc.rubric, "the input", "the answer")
				if s.users[i] != want {
					t.Fatalf("sample %d user message = %q, want %q", i, s.users[i], want)
				}
			}
		})
	}
}

func TestEvaluateLLMJudgeDefaultThresholdIs70(t *testing.T) {
	got := Evaluate(context.Background(), agentfile.Assertion{Type: agentfile.LLMJudge}.With(agentfile.Operands{Rubric: "r"}), "", "",
		&scripted{replies: []string{`{"score":70,"reasoning":""}`, `{"score":70,"reasoning":""}`}})
	if got.Threshold == nil || *got.Threshold != 70 || got.Outcome != Pass {
		t.Fatalf("got threshold %v outcome %q, want 70 pass", got.Threshold, got.Outcome)
	}
}

func TestEvaluateLLMJudgeNoSamplerIsUnknown(t *testing.T) {
	got := Evaluate(context.Background(), agentfile.Assertion{Type: agentfile.LLMJudge}.With(agentfile.Operands{Rubric: "r"}), "", "", nil)
	if got.Outcome != Unknown {
		t.Fatalf("Outcome = %q, want unknown", got.Outcome)
	}
}

func TestEvaluateLLMJudgeCanceledSendsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &scripted{replies: []string{`{"score":100,"reasoning":""}`, `{"score":100,"reasoning":""}`}}
	got := Evaluate(ctx, agentfile.Assertion{Type: agentfile.LLMJudge}.With(agentfile.Operands{Rubric: "r"}), "", "", s)
	if got.Outcome != Unknown || !got.Abort || s.calls != 0 {
		t.Fatalf("Outcome/Abort/calls = %q/%v/%d, want unknown/true/0", got.Outcome, got.Abort, s.calls)
	}
}

// modelSampler sends samples straight to a route.Model, with no journal: a
// test stand-in for the runner's Session-backed Sampler.
type modelSampler struct{ m route.Model }

func (s modelSampler) Sample(ctx context.Context, _ <-chan struct{}, judgeModel, instructions, input string) (string, error) {
	c, err := s.m.Complete(ctx, route.ChatRequest(judgeModel, instructions, input))
	return c.Text, err
}

func TestFakeJudgeEndToEnd(t *testing.T) {
	tests := []struct {
		name    string
		rubric  string
		answer  string
		want    Outcome
		wantAct string
	}{
		{"all phrases present", "Mentions `Monday` and `standup`.", "Standup is on Monday: standup.", Pass, "scores 100, 100"},
		{"one phrase missing", "Mentions `Monday` and `Friday`.", "Monday only", Fail, "scores 0, 0"},
		{"no quoted phrase", "Is polite.", "Thanks!", Unknown, "scores none, none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := agentfile.Assertion{Type: agentfile.LLMJudge}.With(agentfile.Operands{Rubric: tc.rubric, JudgeModel: "gpt-judge"})
			got := Evaluate(context.Background(), a, "in", tc.answer, modelSampler{NewFakeModel()})
			if got.Outcome != tc.want || got.Actual != tc.wantAct || got.Abort {
				t.Fatalf("got %q %q abort=%v (%s), want %q %q", got.Outcome, got.Actual, got.Abort, got.Message, tc.want, tc.wantAct)
			}
		})
	}
}

func TestFakeJudgement(t *testing.T) {
	tests := []struct {
		name          string
		rubric        string
		answer        string
		wantScore     *int
		wantReasoning string
	}{
		{"all found", "Says `hello` and `world`", "hello, world", intp(100), "found `hello`, `world`"},
		{"one missing", "Says `hello` and `world`", "hello", intp(0), "missing `world`; found `hello`"},
		{"all missing", "Says `a b` and `c.d`", "nothing", intp(0), "missing `a b`, `c.d`"},
		{"repeated phrase counted once", "`x` then `x`", "x", intp(100), "found `x`"},
		{"case-sensitive", "Says `Hello`", "hello", intp(0), "missing `Hello`"},
		{"no phrase", "Be kind", "ok", nil, "inconclusive"},
		{"empty quotes are not a phrase", "Be `` kind", "ok", nil, "inconclusive"},
		{"a quote does not span lines", "Has `a\nb`", "a\nb", nil, "inconclusive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FakeJudgement(tc.rubric, tc.answer)
			if (got.Score == nil) != (tc.wantScore == nil) || (got.Score != nil && *got.Score != *tc.wantScore) {
				t.Fatalf("Score = %v, want %v", got.Score, tc.wantScore)
			}
			if !strings.HasPrefix(got.Reasoning, tc.wantReasoning) {
				t.Fatalf("Reasoning = %q, want prefix %q", got.Reasoning, tc.wantReasoning)
			}
		})
	}
}

func TestFakeJudgeModel(t *testing.T) {
	m := NewFakeModel()
	if got, want := m.Identity(), (route.Identity{Route: "fake", Model: "fake"}); got != want {
		t.Fatalf("Identity = %+v, want %+v", got, want)
	}
	user, err := Payload("Has `<b>`", "q", "a <b> tag")
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Complete(context.Background(), route.ChatRequest("any", Instructions, user))
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "fake" || c.FinishReason != "stop" {
		t.Fatalf("Completion = %+v", c)
	}
	r, err := ParseReply(c.Text)
	if err != nil || r.Score == nil || *r.Score != 100 {
		t.Fatalf("fake judge reply %q parsed to %+v, %v; want score 100", c.Text, r, err)
	}

	for _, bad := range []string{"", "hello", `{"rubric":"r","input":"i"}`, `{"rubric":"r","input":"i","answer":"a","x":1}`, `{"rubric":"r","input":"i","answer":"a"} {}`} {
		if _, err := m.Complete(context.Background(), route.ChatRequest("fake", Instructions, bad)); err == nil {
			t.Fatalf("user message %q: want an error", bad)
		} else if strings.Contains(err.Error(), bad) && bad != "" {
			t.Fatalf("error %q quotes the user message", err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Complete(ctx, route.ChatRequest("fake", Instructions, user)); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: err = %v, want context.Canceled", err)
	}
}

func TestPayloadIsTheDocumentedObject(t *testing.T) {
	got, err := Payload("r <&>", "i\n", `a "q"`)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"rubric":"r <&>","input":"i\n","answer":"a \"q\""}`
	if got != want {
		t.Fatalf("Payload = %s, want %s", got, want)
	}
}

func TestVerdict(t *testing.T) {
	res := func(outcomes ...Outcome) []AssertionResult {
		out := make([]AssertionResult, len(outcomes))
		for i, o := range outcomes {
			out[i] = AssertionResult{Index: i, Outcome: o}
		}
		return out
	}
	tests := []struct {
		name    string
		results []AssertionResult
		want    Outcome
		wantMsg string
	}{
		{"no assertions", nil, Unknown, "add an assert list"},
		{"all pass", res(Pass, Pass), Pass, "all 2 assertions passed"},
		{"fail beats unknown", res(Pass, Unknown, Fail), Fail, "1 of 3 assertions failed (#3)"},
		{"unknown beats pass", res(Pass, Unknown), Unknown, "1 of 2 could not be decided (#2)"},
		{"empty outcome is not a pass", res(Pass, ""), Unknown, "(#2)"},
		{"refused is not a pass", res(Refused), Unknown, "(#1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Verdict(tc.results)
			if got.Outcome != tc.want || !strings.Contains(got.Message, tc.wantMsg) {
				t.Fatalf("Verdict = %+v, want %q with %q", got, tc.want, tc.wantMsg)
			}
		})
	}
}

// barrier is a Sampler whose samples answer only once all of them have been
// sent: Evaluate completes only if it requests the samples at the same time.
type barrier struct {
	all  sync.WaitGroup
	sent atomic.Int32
}

func (b *barrier) Sample(ctx context.Context, _ <-chan struct{}, _, _, _ string) (string, error) {
	b.sent.Add(1)
	b.all.Done()
	waited := make(chan struct{})
	go func() { b.all.Wait(); close(waited) }()
	select {
	case <-waited:
		return `{"score": 90, "reasoning": "fine"}`, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func TestEvaluateLLMJudgeSendsTheSamplesAtOnce(t *testing.T) {
	b := &barrier{}
	b.all.Add(Samples)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := Evaluate(ctx, agentfile.Assertion{Type: agentfile.LLMJudge}.With(agentfile.Operands{Rubric: "r"}), "in", "out", b)
	if got.Outcome != Pass || got.Actual != "scores 90, 90" || b.sent.Load() != Samples {
		t.Fatalf("Outcome/Actual/sent = %q/%q/%d (%s), want pass/scores 90, 90/%d", got.Outcome, got.Actual, b.sent.Load(), got.Message, Samples)
	}
}

// failFirst fails sample 1 at once and holds sample 2 until it is cancelled.
type failFirst struct{ secondCancelled atomic.Bool }

func (f *failFirst) Sample(ctx context.Context, prev <-chan struct{}, _, _, _ string) (string, error) {
	if prev == nil {
		return "", errors.New("route: endpoint unreachable")
	}
	<-ctx.Done()
	f.secondCancelled.Store(true)
	return "", ctx.Err()
}

func TestEvaluateLLMJudgeFailureCancelsTheOtherSample(t *testing.T) {
	f := &failFirst{}
	got := Evaluate(context.Background(), agentfile.Assertion{Type: agentfile.LLMJudge}.With(agentfile.Operands{Rubric: "r"}), "in", "out", f)
	if got.Outcome != Unknown || !got.Abort || !f.secondCancelled.Load() {
		t.Fatalf("Outcome/Abort/second cancelled = %q/%v/%v, want unknown/true/true", got.Outcome, got.Abort, f.secondCancelled.Load())
	}
	if want := "judge sample 1 of 2 was unavailable: route: endpoint unreachable"; got.Message != want {
		t.Fatalf("Message = %q, want %q (the cause, not the cancelled sample)", got.Message, want)
	}
}
