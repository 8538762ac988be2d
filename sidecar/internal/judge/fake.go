package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/route"
)

// quotedPhrase is one backtick-quoted phrase of a rubric: one or more
// characters on a single line with no backtick, the same quoting the fake
// model's directives use.
var quotedPhrase = regexp.MustCompile("`([^`\n]+)`")

// fakeJudge is the fake route's judge. It has no state, so it is safe for
// concurrent use.
type fakeJudge struct{}

// NewFakeModel returns the fake judge, served in memory on the fake route.
// It reads the judge payload from the user message and scores 100 when every
// backtick-quoted phrase of the rubric appears in the answer, 0 when one is
// missing, and null (inconclusive) when the rubric quotes no phrase. Its
// reply follows the judge reply format, so it goes through ParseReply like any
// judge's.
func NewFakeModel() route.Model { return fakeJudge{} }

func (fakeJudge) Identity() route.Identity {
	return route.Identity{Route: route.Fake, Model: route.Fake}
}

// Complete answers one judge sample. The request's model name is not checked:
// on the fake route every authored judge model is served by the fake judge.
func (fakeJudge) Complete(ctx context.Context, req route.Request) (route.Completion, error) {
	if err := ctx.Err(); err != nil {
		return route.Completion{}, err
	}
	var user string
	for _, m := range req.Messages {
		if m.Role == "user" {
			user = m.Content
		}
	}
	p, err := decodePayload(user)
	if err != nil {
		return route.Completion{}, err
	}
	reply, err := json.Marshal(FakeJudgement(p.Rubric, p.Answer))
	if err != nil {
		return route.Completion{}, fmt.Errorf("judge: encode the fake judge reply: %w", err)
	}
	c := route.Completion{Model: route.Fake, Text: string(reply), FinishReason: "stop"}
	// The fake model's deterministic count, so a judge's usage shows too.
	u := route.FakeUsage(req, c)
	c.Usage = &u
	return c, nil
}

// errNotPayload keeps the refusal text fixed: the user message is not quoted.
var errNotPayload = errors.New("the fake judge was sent a user message that is not a judge payload " +
	`(one JSON object with the string fields "rubric", "input" and "answer")`)

func decodePayload(s string) (payload, error) {
	var raw struct {
		Rubric *string `json:"rubric"`
		Input  *string `json:"input"`
		Answer *string `json:"answer"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil || raw.Rubric == nil || raw.Input == nil || raw.Answer == nil {
		return payload{}, errNotPayload
	}
	if dec.More() {
		return payload{}, errNotPayload
	}
	return payload{Rubric: *raw.Rubric, Input: *raw.Input, Answer: *raw.Answer}, nil
}

// FakeUnscorable is why an llmJudge judged by the fake judge with no score
// is unknown: the fake scores only the phrases a rubric quotes in
// backticks. It says how to choose the fake judge's score.
const FakeUnscorable = "the fake judge gave no score: it scores only the phrases a rubric quotes in backticks, and this rubric quotes none; " +
	"so this is inconclusive: unknown, not a pass; quote in the rubric the text a good answer must contain (for example `refund`) to choose the fake judge's score, " +
	"or judge on a real model"

// FakeJudgement is the fake judge's rule as a pure function. Reasoning lists
// the phrases found and missing, in rubric order, each quoted once.
func FakeJudgement(rubric, answer string) Reply {
	var found, missing []string
	seen := map[string]bool{}
	for _, m := range quotedPhrase.FindAllStringSubmatch(rubric, -1) {
		phrase := m[1]
		if seen[phrase] {
			continue
		}
		seen[phrase] = true
		if strings.Contains(answer, phrase) {
			found = append(found, "`"+phrase+"`")
		} else {
			missing = append(missing, "`"+phrase+"`")
		}
	}
	if len(found)+len(missing) == 0 {
		return Reply{Reasoning: "inconclusive: the rubric quotes no phrase in backticks, " +
			"so the fake judge has nothing to look for"}
	}
	score := 100
	reasoning := "found " + strings.Join(found, ", ")
	if len(missing) > 0 {
		score = 0
		reasoning = "missing " + strings.Join(missing, ", ")
		if len(found) > 0 {
			reasoning += "; found " + strings.Join(found, ", ")
		}
	}
	return Reply{Score: &score, Reasoning: reasoning}
}
