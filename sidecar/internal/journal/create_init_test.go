package journal_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// TestSchemaUnderConstructionIsPartialAndCleared: Create builds the schema
// under R.db-init and renames it to R.db, so a run killed before the rename
// leaves R.db-init and an unheld R.lock. That family is never a run: List
// shows it as partial even while it is young (the lock was taken before the
// schema was started, so an unheld lock means the run died), and Clear("")
// removes it.
func TestSchemaUnderConstructionIsPartialAndCleared(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	id := time.Now().UTC().Format("20060102T150405.000000000Z") + "-0a1b2c3d"
	if !journal.ValidRunID(id) {
		t.Fatalf("test run ID %q is not valid", id)
	}
	for _, name := range []string{id + ".db-init", id + ".db-init-journal", id + ".lock"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := journal.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(runs, func(r journal.RunInfo) bool { return r.ID == id })
	if i < 0 || runs[i].Status != journal.RunPartial {
		t.Fatalf("runs = %+v, want %s listed as partial", runs, id)
	}
	if _, err := journal.Clear(dir, ""); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Clear left %d files of the family", len(ents))
	}
}

// TestCreateLeavesNoInitFile: a created journal is under its own name only.
func TestCreateLeavesNoInitFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Create(t.Context(), dir, journal.RunMeta{KmxVersion: "t", AgentID: "a", AgentRevision: "r", Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, c := range []string{"-init", "-init-journal"} {
		if _, err := os.Lstat(j.Path() + c); !os.IsNotExist(err) {
			t.Errorf("%s%s exists after Create: %v", j.Path(), c, err)
		}
	}
	fi, err := os.Stat(j.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal %v mode %v", err, fi)
	}
}
