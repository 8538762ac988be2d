package cli

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// userTranscript runs each command line in the state folder h and returns
// what a user sees: the command, its stdout, its stderr (prefixed "! ") and
// its exit code. Folder paths are replaced by their names in dirs (so the
// transcript is the same on every machine), and durations and run IDs are
// normalized.
func userTranscript(t *testing.T, h string, dirs map[string]string, cmds ...[]string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range cmds {
		r := kmx(t, h, args...)
		fmt.Fprintf(&b, "$ kmx %s\n", strings.Join(args, " "))
		b.WriteString(r.stdout)
		for _, line := range strings.SplitAfter(r.stderr, "\n") {
			if line != "" {
				b.WriteString("! " + line)
			}
		}
		fmt.Fprintf(&b, "exit %d\n\n", r.code)
	}
	return scrubPaths(b.String(), h, dirs)
}

// scrubPaths replaces the state folder by $KMX_HOME, each folder in dirs by
// its name, and run IDs, revisions and durations by placeholders.
func scrubPaths(s, h string, dirs map[string]string) string {
	type pair struct{ path, name string }
	var ps []pair
	for name, p := range dirs {
		ps = append(ps, pair{p, name})
	}
	ps = append(ps, pair{h, "$KMX_HOME"})
	// Longest first: a folder inside another is replaced by its own name.
	slices.SortFunc(ps, func(a, b pair) int { return len(b.path) - len(a.path) })
	for _, p := range ps {
		s = strings.ReplaceAll(s, p.path, p.name)
	}
	return normalize(scrubRun(s), nil)
}

// noJournals fails the test when the state folder h holds any run.
func noJournals(t *testing.T, h string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(h, "local-preview", "journals"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("a refused invocation created journal files: %v", names)
	}
}

func fileText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJUnitOverwroteTheAgentUnderTest: `kmx test ci/a.agent.md --junit
// ci/a.agent.md` turned the agent into XML. Every --junit path that is an
// agent file, an examples file, kmx.yaml, a folder, another existing file
// or a folder that does not exist is refused before anything runs, and the
// file is left as it was.
func TestJUnitOverwroteTheAgentUnderTest(t *testing.T) {
	h := home(t)
	ci := agentTree(t, map[string]string{
		"a.agent.md":                passAgent,
		"b.agent.md":                "---\nmodel: fake\n---\nReply with exactly `ok`.\n",
		"b.agent.examples.yaml":     "- id: a\n  input: hi\n  assert:\n    - contains: ok\n",
		"kmx.yaml":                  "tools: {}\n",
		"notes.txt":                 "my notes\n",
		"reports/.keep":             "",
		".github/agents/x.agent.md": passAgent,
	})
	agent := filepath.Join(ci, "a.agent.md")
	var cmds [][]string
	for _, out := range []string{"a.agent.md", "b.agent.examples.yaml", "kmx.yaml", "reports", "notes.txt", "new.agent.md", "missing/out.xml"} {
		cmds = append(cmds, []string{"test", agent, "--junit", filepath.Join(ci, out)})
	}
	before := map[string]string{}
	for _, f := range []string{"a.agent.md", "b.agent.examples.yaml", "kmx.yaml", "notes.txt"} {
		before[f] = fileText(t, filepath.Join(ci, f))
	}
	got := userTranscript(t, h, map[string]string{"ci": ci}, cmds...)
	golden(t, "junit-refused.txt", got)
	for f, text := range before {
		if after := fileText(t, filepath.Join(ci, f)); after != text {
			t.Errorf("%s changed:\n%s", f, after)
		}
	}
	if _, err := os.Stat(filepath.Join(ci, "new.agent.md")); !os.IsNotExist(err) {
		t.Errorf("new.agent.md was created: %v", err)
	}
	noJournals(t, h)
}

// TestJUnitToAFolderThatDoesNotExistIsRefusedFirst: a bad --junit path was
// found only after every example had run. It is refused before a journal
// exists, for one file and for a folder run.
func TestJUnitToAFolderThatDoesNotExistIsRefusedFirst(t *testing.T) {
	h := home(t)
	ci := agentTree(t, map[string]string{"a.agent.md": passAgent, "b.agent.md": failAgent})
	for _, target := range []string{filepath.Join(ci, "a.agent.md"), ci} {
		r := kmx(t, h, "test", target, "--junit", "/nonexistent/dir/out.xml")
		if r.code != ExitRefusal || r.stdout != "" || !strings.Contains(r.stderr, "does not exist") || !strings.Contains(r.stderr, "next: ") {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", target, r.code, r.stdout, r.stderr)
		}
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		r := kmx(t, h, "test", ci, "--junit", filepath.Join(ro, "out.xml"))
		if r.code != ExitRefusal || !strings.Contains(r.stderr, "cannot write") {
			t.Fatalf("read-only folder: exit %d\n%s", r.code, r.stderr)
		}
	}
	noJournals(t, h)
}

// TestJUnitReplacesItsOwnReport: the report kmx wrote (now or by a kmx
// before the marker) is replaced on the next run, by rename, with no
// temporary file left beside it.
func TestJUnitReplacesItsOwnReport(t *testing.T) {
	h := home(t)
	ci := agentTree(t, map[string]string{"a.agent.md": passAgent})
	out := filepath.Join(ci, "junit.xml")
	for i := 0; i < 2; i++ {
		if r := kmx(t, h, "test", filepath.Join(ci, "a.agent.md"), "--junit", out); r.code != ExitOK {
			t.Fatalf("run %d: exit %d %s", i, r.code, r.stderr)
		}
	}
	if text := fileText(t, out); !strings.Contains(text, junitMarker) || !strings.Contains(text, `<testcase name="a"`) {
		t.Fatalf("the report:\n%s", text)
	}
	// A report from a kmx before the marker.
	old := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<testsuites>` + "\n" + `  <testsuite name="a.agent.md" tests="1" failures="0" errors="0" time="0.001">` + "\n" +
		`    <properties>` + "\n" + `      <property name="label" value="local preview"></property>` + "\n"
	if err := os.WriteFile(out, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := kmx(t, h, "test", filepath.Join(ci, "a.agent.md"), "--junit", out); r.code != ExitOK {
		t.Fatalf("over an older kmx report: exit %d %s", r.code, r.stderr)
	}
	ents, err := os.ReadDir(ci)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".kmx-junit") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
}

// TestAFolderRunDeletedItsOwnJournals: `kmx test ci25/ --json` on 25
// files ended with 5 of the run IDs in its own JSON and JUnit already gone
// (each file's run start counted the invocation's earlier, finished runs
// as the oldest). Every run a folder run reports is still there when it
// ends; runs of earlier invocations are still deleted oldest first, and
// the next run start brings the folder back to the newest 20.
func TestAFolderRunDeletedItsOwnJournals(t *testing.T) {
	h := home(t)
	one := agentTree(t, map[string]string{"one.agent.md": passAgent})
	earlier := testRun(t, h, filepath.Join(one, "one.agent.md"))
	files := map[string]string{}
	for i := 0; i < journal.KeepRuns+2; i++ {
		files[fmt.Sprintf("a%02d.agent.md", i)] = passAgent
	}
	ci := agentTree(t, files)
	junit := filepath.Join(t.TempDir(), "junit.xml")
	r := kmx(t, h, "test", ci, "--json", "--junit", junit)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var got testedFiles
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	list := listRuns(t, h)
	kept := map[string]bool{}
	for _, run := range list.Runs {
		kept[run.RunID] = true
	}
	if len(got.Files) != len(files) {
		t.Fatalf("%d reports for %d files", len(got.Files), len(files))
	}
	for _, rep := range got.Files {
		if !kept[rep.RunID] {
			t.Errorf("%s: run %s, reported in the JSON, was deleted by the run itself", rep.Agent.Path, rep.RunID)
		}
	}
	if kept[earlier] {
		t.Errorf("the earlier invocation's run %s was kept: retention must still delete the oldest finished run", earlier)
	}
	for _, id := range runIDText.FindAllString(fileText(t, junit), -1) {
		if !kept[id] {
			t.Errorf("run %s, named in the JUnit report, is gone", id)
		}
	}
	// The next start deletes the oldest finished runs down to the newest 20.
	testRun(t, h, filepath.Join(one, "one.agent.md"))
	if n := len(listRuns(t, h).Runs); n != journal.KeepRuns {
		t.Errorf("%d runs after the next start, want %d", n, journal.KeepRuns)
	}
}

// TestFolderScansSkippedGitHubAgents: `kmx test .` in a repository whose
// agents live in .github/agents said ". holds no *.agent.md file". Every
// .md directly in .github/agents is an agent (as in VS Code), for kmx test
// and kmx check, named by the folder or from inside it; other hidden
// folders, other .github folders, subfolders of .github/agents and
// node_modules stay skipped.
func TestFolderScansSkippedGitHubAgents(t *testing.T) {
	repo := agentTree(t, map[string]string{
		".github/agents/planner.agent.md":      passAgent,
		".github/agents/reviewer.md":           passAgent,
		".github/agents/notes.txt":             "not an agent\n",
		".github/agents/old/x.agent.md":        invalidAgent,
		".github/workflows/ci.agent.md":        invalidAgent,
		".github/copilot-instructions.md":      "Be brief.\n",
		".vscode/y.agent.md":                   invalidAgent,
		"node_modules/pkg/.github/agents/z.md": invalidAgent,
		"docs/readme.md":                       "# docs\n",
		"tools/lint.agent.md":                  passAgent,
	})
	h := home(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(repo)
	got := userTranscript(t, h, map[string]string{"REPO": repo},
		[]string{"check", "."},
		[]string{"test", "."},
	)
	t.Chdir(filepath.Join(repo, ".github", "agents"))
	got += userTranscript(t, h, map[string]string{"REPO": repo}, []string{"check", "."})
	t.Chdir(wd)
	golden(t, "github-agents.txt", got)
	for _, want := range []string{".github/agents/planner.agent.md: ok", ".github/agents/reviewer.md: ok", "tools/lint.agent.md: ok", "reviewer.md: ok"} {
		if !strings.Contains(got, want) {
			t.Errorf("the transcript lacks %q", want)
		}
	}
	for _, skipped := range []string{"old/x.agent.md", "ci.agent.md", "y.agent.md", "z.md", "readme.md", "copilot-instructions", "notes.txt"} {
		if strings.Contains(got, skipped) {
			t.Errorf("the scan read %s", skipped)
		}
	}
}

// shardsOf runs kmx check --shard k/n for every k with args and returns
// each file's shard by its base name.
func shardsOf(t *testing.T, h string, n int, args ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for k := 1; k <= n; k++ {
		r := kmx(t, h, append([]string{"check", "--shard", fmt.Sprintf("%d/%d", k, n)}, args...)...)
		if r.code != ExitOK {
			t.Fatalf("check --shard %d/%d %v: exit %d %s", k, n, args, r.code, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if name, _, ok := strings.Cut(line, ": ok"); ok && line != "" {
				out[filepath.Base(name)] = k
			}
		}
	}
	return out
}

// TestShardDependedOnHowThePathWasSpelt: `.`, `ci` and an absolute path
// gave different shards, so CI machines that spelt the folder differently
// tested some files twice and others never. The shard key is the path from
// the git work tree's root (outside git, from the folder given).
func TestShardDependedOnHowThePathWasSpelt(t *testing.T) {
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		files["ci/"+n+".agent.md"] = passAgent
	}
	repo := agentTree(t, files)
	git := exec.Command("git", "init", "-q", repo)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	h := home(t)
	ci := filepath.Join(repo, "ci")
	want := shardsOf(t, h, 3, ci)
	if len(want) != len(files) {
		t.Fatalf("the shards cover %d of %d files: %v", len(want), len(files), want)
	}
	t.Chdir(repo)
	for _, spelt := range [][]string{{"ci"}, {"./ci/"}, {"."}} {
		if got := shardsOf(t, h, 3, spelt...); !maps.Equal(got, want) {
			t.Errorf("from the repository root, %v: %v, want %v", spelt, got, want)
		}
	}
	t.Chdir(ci)
	if got := shardsOf(t, h, 3, "."); !maps.Equal(got, want) {
		t.Errorf("from ci, .: %v, want %v", got, want)
	}
	if got := shardsOf(t, h, 3, "a.agent.md", "b.agent.md", "c.agent.md", "d.agent.md", "e.agent.md", "f.agent.md", "g.agent.md", "h.agent.md", "i.agent.md", "j.agent.md"); !maps.Equal(got, want) {
		t.Errorf("from ci, the files by name: %v, want %v", got, want)
	}
	// The key is documented: the path from the work tree's root, slashed.
	for name, k := range want {
		if k != shardOf("ci/"+name, 3) {
			t.Errorf("%s is in shard %d, not the shard of ci/%s", name, k, name)
		}
	}

	// Outside git: the path from the folder given.
	plain := agentTree(t, map[string]string{"a.agent.md": passAgent, "b.agent.md": passAgent, "c.agent.md": passAgent, "d.agent.md": passAgent, "e.agent.md": passAgent})
	abs := shardsOf(t, h, 2, plain)
	t.Chdir(plain)
	if got := shardsOf(t, h, 2, "."); !maps.Equal(got, abs) {
		t.Errorf("outside git, . gave %v and the absolute path %v", got, abs)
	}
	for name, k := range abs {
		if k != shardOf(name, 2) {
			t.Errorf("outside git, %s is in shard %d, not the shard of its name", name, k)
		}
	}
}

// TestOneAgentWithoutExamplesFailedTheWholeCIRun: a folder run exited 2
// with a JUnit error because one agent had no examples. In a folder run it
// is reported as "no examples" (skipped in the JSON and the JUnit, the exit
// code the others'); named alone it is still refused. Both propose the
// examples file beside the agent, not an edit of the agent.
func TestOneAgentWithoutExamplesFailedTheWholeCIRun(t *testing.T) {
	ci := agentTree(t, map[string]string{
		"a.agent.md":         passAgent,
		"planner.agent.md":   "---\ndescription: Plans work\ntools: ['search']\n---\nYou plan the work and never edit files.\n",
		"z/failing.agent.md": failAgent,
	})
	h := home(t)
	junit := filepath.Join(t.TempDir(), "junit.xml")
	got := userTranscript(t, h, map[string]string{"ci": ci},
		[]string{"test", ci},
		[]string{"test", filepath.Join(ci, "planner.agent.md")},
	)
	golden(t, "no-examples.txt", got)
	if r := kmx(t, h, "test", filepath.Join(ci, "a.agent.md"), filepath.Join(ci, "planner.agent.md"), "--junit", junit); r.code != ExitOK {
		t.Fatalf("two files, one without examples: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r := kmx(t, h, "test", ci, "--json", "--junit", junit)
	if r.code != ExitFailure {
		t.Fatalf("exit %d, want 1 (the failing file's, not the file without examples')\n%s", r.code, r.stderr)
	}
	var files testedFiles
	if err := json.Unmarshal([]byte(r.stdout), &files); err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, f := range files.Files {
		verdicts[filepath.Base(f.Agent.Path)] = f.Verdict
	}
	if verdicts["planner.agent.md"] != "skipped" || verdicts["a.agent.md"] != "pass" || verdicts["failing.agent.md"] != "fail" {
		t.Errorf("verdicts %v", verdicts)
	}
	var doc junitSuites
	if err := xml.Unmarshal([]byte(fileText(t, junit)), &doc); err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, s := range doc.Suites {
		if filepath.Base(s.Name) != "planner.agent.md" {
			continue
		}
		seen = true
		if s.Errors != 0 || s.Skipped != 1 || len(s.Cases) != 1 || s.Cases[0].Skipped == nil || s.Cases[0].Error != nil ||
			!strings.Contains(s.Cases[0].Skipped.Message, "planner.agent.examples.yaml") {
			t.Errorf("the file without examples in JUnit: %+v", s)
		}
	}
	if !seen {
		t.Errorf("the file without examples is not in the JUnit report")
	}
}

// TestTheFakeModelsPlaceholderPassedAssertions: an unchanged real agent (no
// Reply with exactly line) got the fake's placeholder answer, and
// notContains, toolNotCalled and a fake-judge rubric all passed. An example
// answered with the placeholder is unknown, saying how to choose the
// fake's answer; so is a fake-judge sample the fake cannot score.
func TestTheFakeModelsPlaceholderPassedAssertions(t *testing.T) {
	ci := agentTree(t, map[string]string{
		"reviewer.agent.md": "---\ndescription: Reviews pull requests\ntools: ['edit/editFiles', 'search']\n---\nYou are a careful reviewer. Point out bugs and never edit files.\n",
		"reviewer.agent.examples.yaml": "- id: polite\n  input: review this diff\n  assert:\n    - notContains: I cannot\n" +
			"- id: no-edits\n  input: fix the typo\n  assert:\n    - toolNotCalled: edit/editFiles\n" +
			"- id: judged\n  input: review this diff\n  assert:\n    - llmJudge:\n        rubric: mentions the `fake model`\n        judgeModel: fake\n",
		"ok.agent.md": "---\nmodel: fake\n---\nReply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: vague-rubric\n  input: hi\n  assert:\n    - llmJudge:\n        rubric: is it a good answer\n        judgeModel: fake\n```\n",
	})
	h := home(t)
	got := userTranscript(t, h, map[string]string{"ci": ci},
		[]string{"test", filepath.Join(ci, "reviewer.agent.md"), "--model", "fake"},
		[]string{"test", filepath.Join(ci, "ok.agent.md")},
	)
	golden(t, "fake-placeholder.txt", got)
	if strings.Contains(got, "PASS") || strings.Count(got, "to choose the fake's answer") != 3 || !strings.Contains(got, "to choose the fake judge's score") {
		t.Errorf("the placeholder or an unscorable fake judge sample passed, or the way to choose the fake's answer is missing:\n%s", got)
	}
	r := kmx(t, h, "test", filepath.Join(ci, "reviewer.agent.md"), "--model", "fake", "--json")
	var rep struct {
		Verdict  string
		Examples []struct{ Verdict string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if r.code != ExitFailure || rep.Verdict != "unknown" || len(rep.Examples) != 3 {
		t.Fatalf("exit %d, verdict %s, %d examples", r.code, rep.Verdict, len(rep.Examples))
	}
	for _, ex := range rep.Examples {
		if ex.Verdict != "unknown" {
			t.Errorf("an example answered with the placeholder is %s", ex.Verdict)
		}
	}
}

// TestModelsFromAgentFilesOnEndpoints: with no model kmx sent its default
// gpt-5.6-terra to the endpoint; from a list it sent "Claude Sonnet 4.6
// (copilot)" verbatim and got a 404; a reply naming another model was
// refused without saying which. On an endpoint, no model, a model list and
// VS Code's "Name (vendor)" form are refused before anything is sent,
// saying to pass --model, and the wrong-model refusal names the model that
// came back.
func TestModelsFromAgentFilesOnEndpoints(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		asked = append(asked, req.Model)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model":"llama3.2:latest","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	const examples = "\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - contains: ok\n```\n"
	ci := agentTree(t, map[string]string{
		"none.agent.md":   "Reply briefly.\n" + examples,
		"vendor.agent.md": "---\nmodel: Claude Sonnet 4.6 (copilot)\n---\nReply briefly.\n" + examples,
		"list.agent.md":   "---\nmodel: ['Claude Sonnet 4.6 (copilot)', 'GPT-5 (copilot)']\n---\nReply briefly.\n" + examples,
		"plain.agent.md":  "---\nmodel: gpt-4o\n---\nReply briefly.\n" + examples,
	})
	h := home(t)
	ep := srv.URL + "/v1"
	got := userTranscript(t, h, map[string]string{"ci": ci, "ENDPOINT": ep},
		[]string{"test", filepath.Join(ci, "none.agent.md"), "--endpoint", ep},
		[]string{"test", filepath.Join(ci, "vendor.agent.md"), "--endpoint", ep},
		[]string{"test", filepath.Join(ci, "list.agent.md"), "--endpoint", ep},
		[]string{"test", filepath.Join(ci, "plain.agent.md"), "--endpoint", ep, "--model", "GPT-5 (copilot)"},
	)
	mu.Lock()
	sent := len(asked)
	mu.Unlock()
	if sent != 0 {
		t.Fatalf("refused invocations sent %d requests: %v", sent, asked)
	}
	noJournals(t, h)
	got += userTranscript(t, h, map[string]string{"ci": ci, "ENDPOINT": ep},
		[]string{"test", filepath.Join(ci, "plain.agent.md"), "--endpoint", ep},
		[]string{"test", filepath.Join(ci, "list.agent.md"), "--endpoint", ep, "--model", "llama3.2:latest"},
	)
	golden(t, "endpoint-models.txt", got)
	if !strings.Contains(got, `it named "llama3.2:latest", but kmx asked for "gpt-4o"`) {
		t.Errorf("the wrong-model refusal does not name the model that came back:\n%s", got)
	}
	if strings.Contains(got, DefaultModelForTest) && !strings.Contains(got, "never its default "+DefaultModelForTest) {
		t.Errorf("the default model was used on an endpoint:\n%s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(asked, []string{"gpt-4o", "llama3.2:latest"}) {
		t.Errorf("the endpoint was asked for %v, want gpt-4o then llama3.2:latest", asked)
	}
}

// DefaultModelForTest is the runner's default model, which an endpoint is
// never sent unasked.
const DefaultModelForTest = invocation.DefaultModel

// TestOneKmxYAMLPerFolderBrokeItsNeighbours: kmx.yaml holds the folder's
// settings, but a tool name this agent did not declare (another agent's
// tool) refused this agent. Such names are fine; a name no agent file in
// the folder declares is refused, as a diagnostic on kmx.yaml in kmx check
// and as the refusal of kmx test.
func TestOneKmxYAMLPerFolderBrokeItsNeighbours(t *testing.T) {
	const ping = "---\nname: pinger\nmodel: fake\ntools: [ping]\n---\nReply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: one\n  input: hi\n  assert:\n    - contains: ok\n```\n"
	const search = "---\nname: searcher\nmodel: fake\ntools: [search]\n---\nReply with exactly `ok`.\n\n## Examples\n\n```yaml\n- id: one\n  input: hi\n  assert:\n    - contains: ok\n```\n"
	ci := agentTree(t, map[string]string{"a.agent.md": ping, "b.agent.md": search, "kmx.yaml": "tools:\n  ping: Disabled\n  search: Enabled\n"})
	h := home(t)
	dirs := map[string]string{"ci": ci}
	got := userTranscript(t, h, dirs,
		[]string{"test", filepath.Join(ci, "a.agent.md")},
		[]string{"check", ci},
	)
	if err := os.WriteFile(filepath.Join(ci, "kmx.yaml"), []byte("tools:\n  ping: Disabled\n  search: Enabled\n  serch: Disabled\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got += userTranscript(t, h, dirs,
		[]string{"check", ci},
		[]string{"check", ci, "--json"},
		[]string{"test", filepath.Join(ci, "a.agent.md")},
	)
	golden(t, "kmx-yaml-folder.txt", got)
	first, rest, _ := strings.Cut(got, "$ kmx check ci\n")
	if !strings.Contains(first, "verdict pass") || !strings.Contains(rest, "ci/kmx.yaml:4:3: error kmx-yaml names tool \"serch\", which no agent file in this folder declares") {
		t.Errorf("want a pass with the neighbour's tool named, then the unknown name on kmx.yaml:\n%s", got)
	}
}

// TestRegradeDemandedAnEndpoint (issue 31 item 10): kmx test FILE --from RUN
// refused a real model without --endpoint, although a re-grade sends no
// agent turn. It re-grades offline; only a judge sample that must be fresh
// needs a route, and without one it says which flag sends it.
func TestRegradeDemandedAnEndpoint(t *testing.T) {
	var mu sync.Mutex
	sent := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		sent++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`, req.Model)
	}))
	defer srv.Close()
	ci := agentTree(t, map[string]string{
		"a.agent.md": "---\nmodel: gpt-4o\n---\nReply briefly.\n\n## Examples\n\n```yaml\n- id: a\n  input: hi\n  assert:\n    - contains: ok\n```\n",
	})
	file := filepath.Join(ci, "a.agent.md")
	h := home(t)
	first := kmx(t, h, "test", file, "--endpoint", srv.URL+"/v1", "--json")
	var rep struct{ RunID string }
	if err := json.Unmarshal([]byte(first.stdout), &rep); err != nil || first.code != ExitOK {
		t.Fatalf("exit %d %v\n%s", first.code, err, first.stderr)
	}
	mu.Lock()
	before := sent
	mu.Unlock()
	r := kmx(t, h, "test", file, "--from", rep.RunID)
	if r.code != ExitOK || !strings.Contains(r.stdout, "PASS") || !strings.Contains(r.stdout, "0 agent model calls") {
		t.Errorf("re-grade without --endpoint: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent != before {
		t.Errorf("the re-grade sent %d requests", sent-before)
	}
}
