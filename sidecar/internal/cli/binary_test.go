package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// kmxBinary builds the real kmx binary once per test process.
func kmxBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kmx-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "kmx")
		out, err := exec.Command("go", "build", "-o", buildOnce.path, "github.com/kmxdev/kmx/sidecar/cmd/kmx").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatalf("build kmx: %v", buildOnce.err)
	}
	return buildOnce.path
}

// TestBinaryTestJournalsFiveRecordsPerTurn runs the real binary as a process
// on a testdata file and reads its journal back.
func TestBinaryTestJournalsFiveRecordsPerTurn(t *testing.T) {
	bin := kmxBinary(t)
	h := home(t)
	cmd := exec.Command(bin, "test", demoFile("release-notes.agent.md"), "--json")
	cmd.Env = append(os.Environ(), "KMX_HOME="+h)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kmx test: %v\n%s", err, out)
	}
	var rep struct {
		RunID, Verdict string
		Journaled      bool
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "pass" || !rep.Journaled || rep.RunID == "" {
		t.Fatalf("report %+v", rep)
	}
	dir := journal.Dir(h)
	if locked, err := journal.IsLocked(dir, rep.RunID); err != nil || locked {
		t.Fatalf("finished run still locked: %v %v", locked, err)
	}
	if _, err := os.Stat(filepath.Join(dir, rep.RunID+".lock")); !os.IsNotExist(err) {
		t.Errorf("the lock file of a finished run remains: %v", err)
	}
	ctx := context.Background()
	j, err := journal.Open(ctx, dir, rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.Status() != journal.StatusFinished {
		t.Errorf("status %q", j.Status())
	}
	ids, err := j.Sessions(ctx)
	if err != nil || len(ids) != 4 {
		t.Fatalf("sessions %v, %v", ids, err)
	}
	for _, id := range ids {
		recs, err := j.Records(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(journal.TurnKinds) {
			t.Fatalf("session %s has %d records", id, len(recs))
		}
		for i, k := range journal.TurnKinds {
			if recs[i].Kind != k {
				t.Errorf("session %s record %d is %s, want %s", id, i, recs[i].Kind, k)
			}
		}
	}
	for _, name := range []string{rep.RunID + ".db"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", name, fi.Mode(), err)
		}
	}
}
