package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/judge"
)

// TestVerdictIsTheOnePlaceAPassIsKept: every way a result can fall short of
// a journaled, replay-verified, fully checked and timely pass turns what the
// assertions called a pass into unknown, with the reason; a fail stays a
// fail, and what the assertions say decides a result that falls short of
// nothing.
func TestVerdictIsTheOnePlaceAPassIsKept(t *testing.T) {
	pass := []judge.AssertionResult{{Outcome: judge.Pass}, {Outcome: judge.Pass}}
	fail := []judge.AssertionResult{{Outcome: judge.Pass}, {Outcome: judge.Fail, Message: "missing"}}
	live, expired := context.Background(), func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}()
	cases := []struct {
		name     string
		res      ExampleResult
		out      Outcome
		asserts  int
		adHoc    bool
		ectx     context.Context
		actx     context.Context
		want     string
		wantText string
	}{
		{name: "verified pass", res: ExampleResult{Journaled: true, Verified: true, Assertions: pass}, asserts: 2, want: VerdictPass},
		{name: "verified fail", res: ExampleResult{Journaled: true, Verified: true, Assertions: fail}, asserts: 2, want: VerdictFail},
		{name: "not journaled", res: ExampleResult{Verified: true, Assertions: pass}, asserts: 2, want: VerdictUnknown, wantText: "not journaled"},
		{name: "not verified", res: ExampleResult{Journaled: true, Assertions: pass}, out: Outcome{Problem: "not replay-verified: replay answer differs"}, asserts: 2,
			want: VerdictUnknown, wantText: "replay answer differs"},
		{name: "not verified, no reason given", res: ExampleResult{Journaled: true, Assertions: pass}, asserts: 2, want: VerdictUnknown, wantText: "replay-verified"},
		{name: "an assertion left unchecked", res: ExampleResult{Journaled: true, Verified: true, Assertions: pass[:1]}, asserts: 2, want: VerdictUnknown, wantText: "not all assertions were checked"},
		{name: "deadline while judging", res: ExampleResult{Journaled: true, Verified: true, Assertions: pass}, asserts: 2, ectx: expired, want: VerdictUnknown, wantText: "deadline expired while judging"},
		{name: "run aborted while judging", res: ExampleResult{Journaled: true, Verified: true, Assertions: pass}, asserts: 2, ectx: expired, actx: expired, want: VerdictUnknown, wantText: "cancelled while judging"},
		{name: "a fail stays a fail past the deadline", res: ExampleResult{Journaled: true, Verified: true, Assertions: fail}, asserts: 2, ectx: expired, want: VerdictFail},
		{name: "ad-hoc input answered", res: ExampleResult{Journaled: true, Verified: true}, adHoc: true, want: VerdictAnswered},
		{name: "ad-hoc input not verified", res: ExampleResult{Journaled: true}, adHoc: true, want: VerdictUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ectx, actx := tc.ectx, tc.actx
			if ectx == nil {
				ectx = live
			}
			if actx == nil {
				actx = live
			}
			l := &loop{}
			got, text := l.verdict(live, actx, ectx, tc.res, tc.out, tc.asserts, tc.adHoc, "an earlier judge reply was malformed")
			if got != tc.want || !strings.Contains(text, tc.wantText) {
				t.Fatalf("verdict = %q (%s), want %q containing %q", got, text, tc.want, tc.wantText)
			}
		})
	}
}
