package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/judge"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// readAgentFile reads an agent file for a command, as a usage error when it
// cannot be read (exit 2: nothing ran).
func readAgentFile(cmd, path string) ([]byte, error) {
	src, err := agentfile.ReadFile(path)
	var tooLarge *agentfile.TooLargeError
	if errors.As(err, &tooLarge) {
		return nil, &RefusalError{Msg: fmt.Sprintf("kmx %s: %v", cmd, err), Next: tooLarge.NextStep()}
	}
	if err != nil {
		return nil, usagef("check the path; kmx reads *.agent.md files", "kmx %s: cannot read %s: %v", cmd, path, problem.PathReason(err))
	}
	return src, nil
}

// runOptions turns the route flags into runner options.
func runOptions(env Env, rf routeFlags) runner.Options {
	return runner.NewOptions(runner.Settings{
		Model:         rf.model,
		Endpoint:      rf.endpoint,
		KeyEnv:        rf.keyEnv,
		JudgeEndpoint: rf.judgeEndpoint,
		JudgeKeyEnv:   rf.judgeKeyEnv,
		Concurrency:   rf.concurrency.n,
	}, env.Getenv, Version)
}

// finish maps a runner outcome to the CLI's error (and so its exit code),
// printing the JSON report when asked.
func finish(env Env, rep *runner.Report, err error, asJSON bool) error {
	if asJSON && rep != nil {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if encErr := enc.Encode(rep); encErr != nil {
			return fmt.Errorf("write report: %w", encErr)
		}
	}
	return verdictError(env, rep, err, !asJSON)
}

// verdictError maps a runner outcome to the CLI's error, printing a refusal's
// diagnostics on stderr when diagnostics is set.
func verdictError(env Env, rep *runner.Report, err error, diagnostics bool) error {
	if err != nil {
		if r, ok := invocation.AsRefusal(err); ok {
			if diagnostics {
				printRefusalDiagnostics(env.Stderr, rep, r)
			}
			return &RefusalError{Msg: r.Msg, Next: r.Next}
		}
		return &RefusalError{Msg: err.Error(), Next: problem.StepFor(err, "nothing was reported as passing")}
	}
	switch rep.Verdict {
	case runner.VerdictPass, runner.VerdictAnswered:
		return nil
	}
	return &FailureError{Msg: rep.Verdict}
}

func printRefusalDiagnostics(w io.Writer, rep *runner.Report, r *invocation.Refusal) {
	path := ""
	if rep != nil {
		path = rep.Agent.Path
	}
	for _, d := range r.Diagnostics {
		fmt.Fprintln(w, agentfile.DiagnosticLine(path, d))
	}
}

// printFooter ends human output with the run's identity and the label;
// on colours the verdict (a terminal without NO_COLOR).
func printFooter(w io.Writer, rep *runner.Report, on bool) {
	fmt.Fprintf(w, "%s: %s · model %s (%s) · %.1f ms\n", plural(len(rep.Examples), "example"), rep.Summary.Counts(), rep.Route.Agent.Model, rep.Route.Agent.Route, rep.DurationMs)
	if line := toolSettingsLine(rep); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := usageLine(rep.Usage); line != "" {
		fmt.Fprintln(w, line)
	}
	if rep.RunID != "" {
		fmt.Fprintf(w, "run %s · journal %s\n", rep.RunID, rep.JournalPath)
	}
	printCapture(w, rep.Capture)
	printStubbed(w, rep.Stubbed)
	fmt.Fprintf(w, "%s: verdict %s (not deployment qualification)\n", runner.Label, paintVerdict(on, rep.Verdict, rep.Verdict))
	if rep.Command == "test" {
		printNotPassing(w, rep)
	}
}

// evidenceLine is what a failed text check expected and what the answer
// held there ("expected \"x\" · actual \"…y…\""), each bounded; "" for
// anything else. An excerpt with a credential shape is withheld. A file
// assertion has none: its Expected is the path its message already names
// and the answer is not what it checks (the changes are, as a diff with
// --show-content).
func evidenceLine(ex runner.ExampleResult) string {
	if ex.Verdict != runner.VerdictFail || ex.Deciding == nil || *ex.Deciding < 0 || *ex.Deciding >= len(ex.Assertions) {
		return ""
	}
	a := ex.Assertions[*ex.Deciding]
	if a.Threshold != nil || len(a.Scores) > 0 || (a.Expected == "" && a.Actual == "") || judge.IsFileAssertion(a.Type) {
		return ""
	}
	quote := func(s string) string {
		if len(secrets.Scan(s)) > 0 {
			return "(withheld: it holds credential-shaped text)"
		}
		if r := []rune(s); len(r) > maxEvidenceRunes {
			s = string(r[:maxEvidenceRunes]) + "…"
		}
		return strconv.Quote(s)
	}
	return "expected " + quote(a.Expected) + " · actual " + quote(a.Actual)
}

// maxEvidenceRunes bounds each side of an evidence line.
const maxEvidenceRunes = 120

// maxListed bounds the examples a footer names, so a large file's run
// still ends in a few lines.
const maxListed = 20

// printNotPassing ends a run with failures with the examples that failed
// (and those that are unknown), so the list is where the eye lands.
func printNotPassing(w io.Writer, rep *runner.Report) {
	var fail, unknown []string
	for _, ex := range rep.Examples {
		switch ex.Verdict {
		case runner.VerdictFail:
			fail = append(fail, ex.ID)
		case runner.VerdictUnknown:
			unknown = append(unknown, ex.ID)
		}
	}
	for _, l := range []struct {
		word string
		ids  []string
	}{{"failing", fail}, {"unknown", unknown}} {
		if len(l.ids) == 0 {
			continue
		}
		shown := l.ids
		more := ""
		if len(shown) > maxListed {
			shown, more = shown[:maxListed], fmt.Sprintf(" and %d more", len(l.ids)-maxListed)
		}
		fmt.Fprintf(w, "%s: %s%s\n", l.word, strings.Join(shown, ", "), more)
	}
}

// printTurns prints a multi-turn example's turns under its line: each
// turn's verdict and why, a turn after one that did not pass "NOT RUN".
func printTurns(w io.Writer, ex runner.ExampleResult) {
	for _, t := range ex.Turns {
		word := verdictWord(t.Verdict)
		if t.Verdict == runner.VerdictNotRun {
			word = "NOT RUN"
		}
		line := t.Message
		if t.Verdict != runner.VerdictPass && t.Verdict != runner.VerdictNotRun {
			// Over trials the message says what happened in each trial.
			line = runner.DecidingLine(runner.ExampleResult{Verdict: t.Verdict, Message: t.Message, Assertions: t.Assertions, Deciding: t.Deciding, Trials: t.Trials})
		}
		fmt.Fprintf(w, "    %-8s %-22s %s\n", word, fmt.Sprintf("turn %d", t.Turn), line)
		if ws := summaryLine(t.Workspace); ws != "" {
			// On a workspace: the copy after this turn, from the fixture.
			fmt.Fprintf(w, "    %-8s %-22s %s\n", "", "", ws)
		}
	}
}

// usageLine is the run's token usage as the routes reported it, the
// agent's and the judge's apart; "" when nothing ran.
func usageLine(u *runner.UsageReport) string { return runner.UsageLine(u) }

func verdictWord(v string) string {
	switch v {
	case runner.VerdictPass:
		return "PASS"
	case runner.VerdictFail:
		return "FAIL"
	case runner.VerdictRefused:
		return "REFUSED"
	case runner.VerdictAnswered:
		return "ANSWERED"
	}
	return "UNKNOWN"
}

// readSmallFile reads at most one byte more than the ad-hoc input limit, so
// an oversized file is refused by the runner with the limit in its message.
func readSmallFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usagef(runUsage, "kmx run: cannot read %s: %v", path, problem.PathReason(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, invocation.MaxAdHocInput+1))
	if err != nil {
		return "", usagef(runUsage, "kmx run: cannot read %s: %v", path, problem.PathReason(err))
	}
	return string(b), nil
}

// onceHeader returns a func that prints the command's header line the first
// time it is called. It is called with the first result, after every
// refusal check has passed: a refused invocation prints only the refusal,
// and a path the runner withholds (it holds the endpoint credential) is
// never printed.
func onceHeader(env Env, cmd, path string) func() {
	printed := false
	return func() {
		if !printed {
			printed = true
			fmt.Fprintf(env.Stdout, "kmx %s %s (%s)\n", cmd, path, runner.Label)
		}
	}
}
