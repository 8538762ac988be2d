package cli

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// junitMarker opens every JUnit report kmx writes, right after the XML
// header: it is how kmx knows an existing file at a --junit path is its own
// report, which it may replace. Any other existing file is refused.
const junitMarker = "<!-- kmx JUnit report (" + runner.Label + "); kmx replaces this file on the next run -->"

// junitNext is the next step of every refused --junit path.
const junitNext = "choose another --junit path: a new file such as junit.xml in a writable folder, or a JUnit report kmx wrote earlier"

// checkJUnitPath refuses a --junit path kmx must not write, before anything
// is created or sent: an agent file (any *.md), an examples file, kmx.yaml,
// a folder, anything that is not a regular file, an existing file that is
// not a JUnit report kmx wrote, or a path whose folder is missing or not
// writable. writeJUnit checks again just before it renames the report into
// place.
func checkJUnitPath(path string) error {
	refuse := func(format string, args ...any) error {
		return &RefusalError{Msg: "kmx test: --junit " + path + " " + fmt.Sprintf(format, args...), Next: junitNext}
	}
	name := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasSuffix(name, ".md"):
		if _, err := os.Lstat(path); err == nil {
			return refuse("is a Markdown file, as agent files are; kmx never writes its report over one")
		}
		return refuse("names a Markdown file; kmx would then read its report as an agent file")
	case strings.HasSuffix(name, agentfile.ExamplesFileSuffix), strings.HasSuffix(name, ".agent.examples.yml"):
		return refuse("names an examples file; kmx never writes a report over one")
	case name == "kmx.yaml" || name == "kmx.yml":
		return refuse("names the folder's kmx.yaml settings; kmx never writes a report over them")
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return refuse("cannot be checked: %v", problem.PathReason(err))
	case fi.IsDir():
		return refuse("is a folder; name a file in it, for example %s", filepath.Join(path, "junit.xml"))
	case !fi.Mode().IsRegular():
		return refuse("is not a regular file (a link or a device); kmx writes its report only to a regular file")
	default:
		ours, err := isKmxJUnit(path)
		if err != nil {
			return refuse("cannot be read to check it is a report kmx wrote: %v", problem.PathReason(err))
		}
		if !ours {
			return refuse("already exists and is not a JUnit report kmx wrote; kmx never overwrites another file")
		}
	}
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	if err != nil || !di.IsDir() {
		return refuse("is in a folder that does not exist (%s); create the folder first", dir)
	}
	probe, err := os.CreateTemp(dir, ".kmx-junit-*")
	if err != nil {
		return refuse("is in a folder kmx cannot write (%v)", problem.PathReason(err))
	}
	probe.Close()
	_ = os.Remove(probe.Name())
	return nil
}

// isKmxJUnit reports whether the file at path is a JUnit report kmx wrote:
// it starts with the XML header and kmx's marker comment. Reports from kmx
// versions before the marker are recognized by their shape: the header,
// then <testsuites>, and the local preview label property in the first
// suite.
func isKmxJUnit(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return false, err
	}
	rest, ok := bytes.CutPrefix(head, []byte(xml.Header))
	if !ok {
		return false, nil
	}
	if bytes.HasPrefix(rest, []byte(junitMarker)) {
		return true, nil
	}
	return bytes.HasPrefix(rest, []byte("<testsuites>")) &&
		bytes.Contains(rest, []byte(`<property name="label" value="`+runner.Label+`"></property>`)), nil
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr,omitempty"`
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
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

// junitSkipped marks a test case that did not run (a file with no examples
// in a folder run).
type junitSkipped struct {
	Message string `xml:"message,attr"`
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
	if t := rep.Tools; t != nil {
		// A summary, not a property per declared tool: the disabled ones
		// (not kmx.yaml's default) are named, every state is in --json.
		suite.Props = append(suite.Props, junitProp{"tools", strings.TrimPrefix(t.Line(), "tools: ")})
		for _, name := range t.Disabled {
			suite.Props = append(suite.Props, junitProp{"toolDisabled", name})
		}
	}
	if s := rep.Stubbed; s != nil {
		// Named once for the file: which tools answered "not available in
		// this test", and how to give them real results.
		for _, name := range s.Tools {
			suite.Props = append(suite.Props, junitProp{"toolStubbed", name})
		}
		suite.Props = append(suite.Props, junitProp{"toolStubbedNext", s.Next})
	}
	for _, ex := range rep.Examples {
		c := junitCase{Name: ex.ID, Classname: rep.Agent.ID, Time: seconds(ex.DurationMs), Props: junitWorkspaceProps(junitToolProps(ex), ex)}
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
	if rep.Verdict == runner.VerdictSkipped {
		// A folder run's file with no examples: skipped, not an error.
		suite.Tests, suite.Skipped = 1, 1
		msg := "no examples"
		if rep.Refusal != nil {
			msg = "no examples: " + rep.Refusal.Message + "; next: " + rep.Refusal.Next
		}
		suite.Cases = []junitCase{{Name: "(file)", Classname: rep.Agent.Path, Time: seconds(0), Skipped: &junitSkipped{Message: msg}}}
		return suite
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
	out = append([]byte(xml.Header+junitMarker+"\n"), append(out, '\n')...)
	// The path was checked before the run; something may have been put
	// there since.
	if err := checkJUnitPath(path); err != nil {
		return err
	}
	// Write beside the target and rename, so a reader never sees half a file.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kmx-junit-*")
	if err != nil {
		return &RefusalError{Msg: fmt.Sprintf("kmx test: cannot write --junit %s: %v", path, problem.PathReason(err)), Next: junitNext}
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
