package runner

import "fmt"

// DecidingLine says in one line why an example has its verdict: the
// deciding assertion ("assertion 2 (contains): ..."), else the example's
// message, else how many assertions passed. Every front prints this line.
func DecidingLine(ex ExampleResult) string {
	if ex.Trials != nil {
		// Over trials the message carries the counts ("flaky 3/5 passed").
		return ex.Message
	}
	if ex.Deciding != nil && *ex.Deciding >= 0 && *ex.Deciding < len(ex.Assertions) {
		a := ex.Assertions[*ex.Deciding]
		msg := a.Message
		if msg == "" {
			msg = string(a.Outcome)
		}
		line := fmt.Sprintf("assertion %d (%s): %s", *ex.Deciding+1, a.Type, msg)
		// A multi-turn example's deciding assertion is its deciding
		// turn's: say which turn.
		for _, t := range ex.Turns {
			if t.Verdict != VerdictPass {
				return fmt.Sprintf("turn %d of %d: %s", t.Turn, len(ex.Turns), line)
			}
		}
		return line
	}
	if ex.Message != "" {
		return ex.Message
	}
	switch n := len(ex.Assertions); n {
	case 0:
		return ""
	case 1:
		return "1 assertion passed"
	default:
		return fmt.Sprintf("%d assertions passed", n)
	}
}
