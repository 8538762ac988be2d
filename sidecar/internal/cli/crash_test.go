//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/readback"
)

// long runs the crash suite with ten times the trials: go test -run Crash
// ./sidecar/internal/cli/ -args -long
var long = flag.Bool("long", false, "run 500 kill trials instead of 50")

// crashAgent writes an agent file of n examples on the fake model, every
// tenth with an llmJudge assertion (two judge samples), all passing; a run
// of 80 takes 0.2 to 0.6 s here, depending on the load.
func crashAgent(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("---\nname: crash\nmodel: fake\n---\nReply with exactly `Answer:` followed by the input\n\n## Examples\n\n```yaml\n")
	for i := range n {
		fmt.Fprintf(&b, "- id: ex%03d\n  input: question %d\n  assert:\n    - contains: \"%d\"\n", i, i, i)
		if i%10 == 0 {
			b.WriteString("    - llmJudge:\n        rubric: mentions `Answer:`\n        judgeModel: fake\n")
		}
	}
	b.WriteString("```\n")
	p := filepath.Join(t.TempDir(), "crash.agent.md")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func kmxCmd(bin, h string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KMX_HOME="+h)
	return cmd
}

// runIDs are the run families in dir (any family file counts).
func runIDs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		if id, _, ok := splitFamily(e.Name()); ok {
			out[id] = true
		}
	}
	return out
}

// splitFamily splits a run family file name into its run ID and suffix.
func splitFamily(name string) (id, suffix string, ok bool) {
	for _, s := range []string{".db-init-journal", ".db-init", ".db-journal", ".db-wal", ".db-shm", ".db", ".lock"} {
		if id, found := strings.CutSuffix(name, s); found {
			return id, s, journal.ValidRunID(id)
		}
	}
	return "", "", false
}

// checkFolder: every file under the state root is accounted for. The
// journal folder holds nothing but run families, none of them unsafe.
func checkFolder(t *testing.T, h string) {
	t.Helper()
	for _, want := range []struct {
		dir     string
		allowed []string
	}{{h, []string{"local-preview", "eval-failures"}}, {filepath.Join(h, "local-preview"), []string{"journals"}}} {
		ents, err := os.ReadDir(want.dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if !slices.Contains(want.allowed, e.Name()) {
				t.Errorf("unaccounted entry %s in %s", e.Name(), want.dir)
			}
		}
	}
	dir := journal.Dir(h)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, _, ok := splitFamily(e.Name()); !ok {
			t.Errorf("stray file %s in the journal folder", e.Name())
		}
	}
	runs, err := journal.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Status == journal.RunUnsafe {
			t.Errorf("run %s is unsafe: %s", r.ID, r.Problem)
		}
	}
}

// outcome counts what the kills left, for the log.
type outcome struct {
	noRun, beforeSchema, crashed, finished, turns, verified int
}

// checkRun is the crash contract for one run that is not executing: its
// journal opens and verifies, every complete turn (all five records, a
// completed terminal) replays to verified, and every other turn stays
// unverified, without an answer.
//
// journal.Create builds the schema under R.db-init and renames it to R.db,
// so a kill before the rename leaves no R.db at all, only R.db-init: List
// must show that family as partial (never as a run), and Clear or retention
// removes it. Every R.db that exists must open.
func checkRun(t *testing.T, dir, id string, o *outcome) {
	t.Helper()
	ctx := context.Background()
	if locked, err := journal.IsLocked(dir, id); err != nil || locked {
		t.Fatalf("run %s of a dead process: locked %v, %v", id, locked, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, id+".db")); os.IsNotExist(err) {
		if _, err := os.Lstat(filepath.Join(dir, id+".db-init")); err == nil {
			// Killed while its schema was being built: never a run.
			runs, lerr := journal.List(dir)
			if lerr != nil {
				t.Fatal(lerr)
			}
			i := slices.IndexFunc(runs, func(r journal.RunInfo) bool { return r.ID == id })
			if i < 0 || runs[i].Status != journal.RunPartial {
				t.Fatalf("run %s was killed building its schema and is not listed as partial: %+v", id, runs)
			}
			o.beforeSchema++
			return
		}
		o.noRun++ // killed between its lock file and its database
		return
	}
	j, err := journal.Open(ctx, dir, id)
	if err != nil {
		t.Fatalf("run %s: its journal does not open after a kill: %v", id, err)
	}
	defer j.Close()
	if err := j.Verify(ctx); err != nil {
		t.Fatalf("run %s: Verify after a kill: %v", id, err)
	}
	switch j.Status() {
	case "":
		o.crashed++
	case journal.StatusFinished:
		o.finished++
	default:
		t.Fatalf("run %s: status %q after a kill", id, j.Status())
	}
	recs, err := j.Records(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	complete := completeSessions(t, recs)
	in, err := readback.Inspect(ctx, dir, id)
	if err != nil {
		t.Fatalf("run %s: Inspect after a kill: %v", id, err)
	}
	if in.LiveCalls != 0 {
		t.Fatalf("run %s: %d live calls during replay", id, in.LiveCalls)
	}
	check := func(session, state string, answer bool) {
		o.turns++
		if complete[session] {
			o.verified++
			if state != readback.TurnVerified || !answer {
				t.Errorf("run %s: complete turn %s replayed as %s", id, session, state)
			}
		} else if state == readback.TurnVerified || answer {
			t.Errorf("run %s: incomplete turn %s shown as %s (answer %v)", id, session, state, answer)
		}
	}
	seen := 0
	for _, tr := range in.Turns {
		check(tr.SessionID, tr.State, tr.Answer != nil)
		seen++
		for _, s := range tr.JudgeSamples {
			check(s.SessionID, s.State, s.Reply != readback.ReplyNone)
			seen++
		}
	}
	if sessions := len(sessionsOf(recs)); seen != sessions {
		t.Errorf("run %s: inspection shows %d turns of %d sessions", id, seen, sessions)
	}
}

func sessionsOf(recs []journal.Record) map[string][]journal.Record {
	out := map[string][]journal.Record{}
	for _, r := range recs {
		if r.SessionID == journal.RunSession {
			continue // the run's result record, not a session
		}
		out[r.SessionID] = append(out[r.SessionID], r)
	}
	return out
}

// completeSessions decides completeness from the records alone, without
// the Sessions code: five records in order and a completed terminal.
func completeSessions(t *testing.T, recs []journal.Record) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for id, rs := range sessionsOf(recs) {
		if len(rs) != len(journal.TurnKinds) {
			continue
		}
		ok := true
		for i, k := range journal.TurnKinds {
			ok = ok && rs[i].Kind == k
		}
		var term journal.TurnTerminal
		if ok && journal.Decode(rs[4].Payload, &term) == nil && term.State == journal.StateCompleted {
			out[id] = true
		}
	}
	return out
}

// stoppedRun starts kmx test and freezes it with SIGSTOP once its run holds
// its lock and has journaled a turn: a run executing in another process for
// as long as the test needs.
func stoppedRun(t *testing.T, bin, h, file string) string {
	t.Helper()
	dir := journal.Dir(h)
	before := runIDs(t, dir)
	cmd := kmxCmd(bin, h, "test", file)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for id := range runIDs(t, dir) {
			if before[id] {
				continue
			}
			fi, err := os.Stat(filepath.Join(dir, id+".db-wal"))
			if locked, _ := journal.IsLocked(dir, id); locked && err == nil && fi.Size() > 0 {
				if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				return id
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("the run to freeze never started")
	return ""
}

// TestKilledTestRunsLeaveVerifiableJournals kills the real kmx test binary
// with SIGKILL at random points, on a shared state folder so every start
// runs retention over the wreckage of earlier kills, and checks the crash
// contract after each kill, at concurrency 1 and 8. Two runs execute throughout, one in this
// process and one in a frozen kmx process: retention must never touch them.
func TestKilledTestRunsLeaveVerifiableJournals(t *testing.T) {
	bin := kmxBinary(t)
	h := home(t)
	dir, err := journal.EnsureDir(h)
	if err != nil {
		t.Fatal(err)
	}
	small := crashAgent(t, 80)
	big := crashAgent(t, 2000)
	trials := 50
	if *long {
		trials = 500
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d trials", seed, trials)
	rng := rand.New(rand.NewPCG(seed, seed>>1))

	ctx := context.Background()
	held, err := journal.Create(ctx, dir, journal.RunMeta{KmxVersion: "t", AgentID: "held", AgentRevision: "r", Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	frozen := stoppedRun(t, bin, h, big)
	executing := []string{held.ID(), frozen}
	heldFiles := map[string][]string{}
	for _, id := range executing {
		heldFiles[id] = familyOf(t, dir, id)
	}

	// Kill points are drawn over one uncut run's duration, measured now, so
	// the kills spread over the whole run however loaded the machine is.
	began := time.Now()
	if out, err := kmxCmd(bin, h, "test", small).CombinedOutput(); err != nil {
		t.Fatalf("uncut run: %v\n%s", err, out)
	}
	span := max(time.Since(began), 100*time.Millisecond)
	t.Logf("an uncut run takes %v", span)

	var o outcome
	for i := range trials {
		before := runIDs(t, dir)
		// Every other kill lands in a run with eight examples in flight,
		// each in its own Session in the one journal.
		concurrency := "1"
		if i%2 == 0 {
			concurrency = "8"
		}
		cmd := kmxCmd(bin, h, "test", small, "--json", "--concurrency", concurrency)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(span))))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()

		checkFolder(t, h)
		for id := range runIDs(t, dir) {
			if !before[id] {
				checkRun(t, dir, id, &o)
			}
		}
		for _, id := range executing {
			if got := familyOf(t, dir, id); !slices.Equal(got, heldFiles[id]) {
				t.Fatalf("trial %d: the executing run %s lost files: %v -> %v", i, id, heldFiles[id], got)
			}
			if locked, err := journal.IsLocked(dir, id); err != nil || !locked {
				t.Fatalf("trial %d: the executing run %s is not locked: %v", i, id, err)
			}
		}
		if t.Failed() {
			t.Fatalf("trial %d failed (seed %d)", i, seed)
		}
	}
	t.Logf("after %d kills: %d before any database, %d before the schema, %d crashed, %d finished; %d turns, %d complete and verified",
		trials, o.noRun, o.beforeSchema, o.crashed, o.finished, o.turns, o.verified)
	if o.crashed == 0 || o.turns == 0 {
		t.Fatalf("no kill landed mid-run: %+v", o)
	}

	// On a loaded machine many kills land before a run's database exists,
	// so the trials may leave fewer than 20 runs: top the folder up with
	// uncut runs, so that the final run's retention has one to delete.
	for {
		listed, err := journal.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) >= journal.KeepRuns {
			break
		}
		if out, err := kmxCmd(bin, h, "test", small).CombinedOutput(); err != nil {
			t.Fatalf("top-up run: %v\n%s", err, out)
		}
	}
	// A final run completes; afterwards exactly 20 runs remain, the two
	// executing ones among them, and every finished one still replays.
	runs := finalRun(t, bin, h, small, dir)
	for _, r := range runs {
		if slices.Contains(executing, r.ID) {
			if r.Status != journal.RunRunning {
				t.Errorf("executing run %s listed as %s", r.ID, r.Status)
			}
			continue
		}
		checkRun(t, dir, r.ID, &o)
	}
	checkFolder(t, h)
}

// finalRun runs one more test of file to completion and returns the runs
// retention keeps afterwards: exactly journal.KeepRuns.
func finalRun(t *testing.T, bin, h, file, dir string) []journal.RunInfo {
	t.Helper()
	if out, err := kmxCmd(bin, h, "test", file).CombinedOutput(); err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	runs, err := journal.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != journal.KeepRuns {
		t.Fatalf("%d runs after the final run, want %d", len(runs), journal.KeepRuns)
	}
	return runs
}

func familyOf(t *testing.T, dir, id string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), id+".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestFourProcessesStartingRunsUnderRetention starts four kmx test
// processes at once over 22 finished runs. Each start runs retention while
// the others execute: every process must finish with its own journal intact
// and verified, and after one more run the folder holds exactly 20 runs.
func TestFourProcessesStartingRunsUnderRetention(t *testing.T) {
	bin := kmxBinary(t)
	h := home(t)
	dir, err := journal.EnsureDir(h)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 22 {
		j, err := journal.Create(ctx, dir, journal.RunMeta{KmxVersion: "t", AgentID: "old", AgentRevision: "r", Command: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Finish(ctx, journal.StatusFinished); err != nil {
			t.Fatal(err)
		}
	}
	file := crashAgent(t, 80)
	type result struct {
		RunID, Verdict string
		Journaled      bool
	}
	results := make([]result, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			cmd := kmxCmd(bin, h, "test", file, "--json")
			cmd.Stdout = &out
			if errs[i] = cmd.Run(); errs[i] == nil {
				errs[i] = json.Unmarshal(out.Bytes(), &results[i])
			}
		}()
	}
	wg.Wait()
	var o outcome
	for i, r := range results {
		if errs[i] != nil || r.Verdict != "pass" || !r.Journaled {
			t.Fatalf("process %d: %v %+v", i, errs[i], r)
		}
		checkRun(t, dir, r.RunID, &o)
	}
	if o.finished != 4 || o.verified != o.turns || o.turns != 4*(80+16) {
		t.Fatalf("the four runs replay as %+v", o)
	}
	runs := finalRun(t, bin, h, file, dir)
	for _, r := range results {
		if !slices.ContainsFunc(runs, func(ri journal.RunInfo) bool { return ri.ID == r.RunID }) {
			t.Errorf("run %s of the concurrent processes is gone after one more run", r.RunID)
		}
	}
	checkFolder(t, h)
}
