package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// trialsFlag is --trials N: how many times each example runs, 1 to
// runner.MaxTrials. Anything else is a usage error naming the range.
type trialsFlag struct{ n int }

func (t *trialsFlag) String() string {
	if t == nil || t.n == 0 {
		return "1"
	}
	return strconv.Itoa(t.n)
}

func (t *trialsFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > runner.MaxTrials {
		return fmt.Errorf("give a whole number from 1 to %d", runner.MaxTrials)
	}
	t.n = n
	return nil
}

// printTrialsAndRegrade adds the trials and re-grade lines to the footer.
func printTrialsAndRegrade(w io.Writer, rep *runner.Report) {
	if rep.Trials > 1 {
		flaky := 0
		for _, ex := range rep.Examples {
			if ex.Trials != nil && ex.Trials.Flaky {
				flaky++
			}
		}
		fmt.Fprintf(w, "%d trials per example, each a fresh Session · %s flaky\n", rep.Trials, plural(flaky, "example"))
	}
	if g := rep.Regrade; g != nil {
		parts := []string{
			plural(g.AgentCalls, "agent model call"),
			fmt.Sprintf("%s replayed from it", plural(g.Replayed, "answer")),
			fmt.Sprintf("%s reused", plural(g.ReusedJudgeSamples, "judge sample")),
			fmt.Sprintf("%s sent", plural(g.JudgeCalls, "fresh judge sample")),
		}
		if g.NotRegraded > 0 {
			parts = append(parts, fmt.Sprintf("%s not re-graded", plural(g.NotRegraded, "example")))
		}
		fmt.Fprintf(w, "re-grade of run %s: %s\n", g.SourceRun, strings.Join(parts, " · "))
	}
}

// trialsWord marks a flaky example in the human output.
func trialsWord(ex runner.ExampleResult) string {
	if ex.Trials != nil && ex.Trials.Flaky {
		return "FLAKY"
	}
	return ""
}
