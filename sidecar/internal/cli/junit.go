package cli

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Props    []junitProp `xml:"properties>property"`
	Cases    []junitCase `xml:"testcase"`
}

// junitProps wraps a test case's properties, absent when it has none.
type junitProps struct {
	Items []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Props     *junitProps   `xml:"properties,omitempty"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes the reports as JUnit XML, a testsuite per file. Unknown
// is never a pass: it is an <error> whose message says "inconclusive";
// refused is an <error> too.
func writeJUnit(path string, reps []*runner.Report) error {
	var doc junitSuites
	for _, rep := range reps {
		doc.Suites = append(doc.Suites, junitSuiteOf(rep))
	}
	return writeXML(path, doc)
}

func junitSuiteOf(rep *runner.Report) junitSuite {
	suite := junitSuite{
		Name:  rep.Agent.Path,
		Tests: len(rep.Examples),
		Time:  seconds(rep.DurationMs),
		Props: []junitProp{{"label", runner.Label}, {"runId", rep.RunID}, {"revision", rep.Agent.Revision}, {"model", rep.Route.Agent.Model}},
	}
	for _, s := range rep.ToolSettings {
		suite.Props = append(suite.Props, junitProp{"toolSetting", s.Name + "=" + s.State})
	}
	for _, ex := range rep.Examples {
		c := junitCase{Name: ex.ID, Classname: rep.Agent.ID, Time: seconds(ex.DurationMs), Props: junitToolProps(ex)}
		line := runner.DecidingLine(ex)
		switch ex.Verdict {
		case runner.VerdictPass, runner.VerdictAnswered:
		case runner.VerdictFail:
			suite.Failures++
			c.Failure = &junitProblem{Message: line, Type: "fail", Text: line}
		case runner.VerdictRefused:
			suite.Errors++
			c.Error = &junitProblem{Message: "refused: " + line, Type: "refused", Text: line}
		default:
			suite.Errors++
			c.Error = &junitProblem{Message: "inconclusive: " + line, Type: "unknown", Text: line}
		}
		suite.Cases = append(suite.Cases, c)
	}
	if len(rep.Examples) == 0 && rep.Refusal != nil {
		// A file refused before any example was selected (an invalid
		// file) still shows in CI, as one errored case.
		suite.Tests, suite.Errors = 1, 1
		suite.Cases = []junitCase{{Name: "(file)", Classname: rep.Agent.Path, Time: seconds(0),
			Error: &junitProblem{Message: "refused: " + rep.Refusal.Message, Type: "refused", Text: rep.Refusal.Message + "\nnext: " + rep.Refusal.Next}}}
	}
	return suite
}

// writeXML writes a JUnit document beside path and renames it into place.
func writeXML(path string, doc junitSuites) error {
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JUnit report: %w", err)
	}
	out = append([]byte(xml.Header), append(out, '\n')...)
	// Write beside the target and rename, so a reader never sees half a file.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kmx-junit-*")
	if err != nil {
		return usagef("choose a --junit path in a writable folder", "kmx test: cannot write %s: %v", path, unwrapPathError(err))
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return fmt.Errorf("write JUnit report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return nil
}

func seconds(ms float64) string { return fmt.Sprintf("%.3f", ms/1000) }
