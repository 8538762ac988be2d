//go:build unix

package journal_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/journal/journaltest"
	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

const convKey = "conv-0123456789abcdef0123456789abcdef"

var convMeta = journal.RunMeta{KmxVersion: "test", AgentID: "a", AgentRevision: "r", Command: "chat"}

func appendOne(t *testing.T, j *journal.Journal) {
	t.Helper()
	if _, err := j.Append(context.Background(), journal.Record{SessionID: "s", Kind: journal.KindSessionPlaced, Version: 1, Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

// TestConversationJournalIsPrivateLockedAndDurable: a conversation journal
// is created private (under umask 0), is locked while open (a second
// opener is ErrBusy), keeps its records across reopens, and is never
// counted by run retention, which lives in another folder.
func TestConversationJournalIsPrivateLockedAndDurable(t *testing.T) {
	testutil.Umask0(t)
	root := filepath.Join(t.TempDir(), "state")
	dir, err := journal.EnsureConversationsDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if dir != journal.ConversationsDir(root) || strings.Contains(dir, "journals") {
		t.Fatalf("conversations folder = %s", dir)
	}
	ctx := context.Background()
	j, created, err := journal.OpenConversation(ctx, dir, convKey, convMeta)
	if err != nil || !created {
		t.Fatalf("OpenConversation = %v, %v", created, err)
	}
	appendOne(t, j)
	if _, _, err := journal.OpenConversation(ctx, dir, convKey, convMeta); !errors.Is(err, journal.ErrBusy) {
		t.Fatalf("second open = %v; want ErrBusy", err)
	}
	if _, err := journal.ClearConversation(dir, convKey); !errors.Is(err, journal.ErrBusy) {
		t.Fatalf("clear while open = %v; want ErrBusy", err)
	}
	for _, name := range testutil.DirNames(t, dir) {
		if got := testutil.Mode(t, filepath.Join(dir, name)); got != 0o600 {
			t.Fatalf("%s has mode %o; want 0600", name, got)
		}
	}
	if err := j.Finish(ctx, journal.StatusFinished); err != nil {
		t.Fatal(err)
	}
	j, created, err = journal.OpenConversation(ctx, dir, convKey, convMeta)
	if err != nil || created {
		t.Fatalf("reopen = %v, %v", created, err)
	}
	appendOne(t, j)
	recs, err := j.Records(ctx, "")
	if err != nil || len(recs) != 2 {
		t.Fatalf("records after reopen = %d, %v; want 2", len(recs), err)
	}
	if err := j.Finish(ctx, journal.StatusFinished); err != nil {
		t.Fatal(err)
	}
	if removed, err := journal.ClearConversation(dir, convKey); err != nil || !removed {
		t.Fatalf("clear = %v, %v", removed, err)
	}
	if names := testutil.DirNames(t, dir); len(names) != 0 {
		t.Fatalf("left after clear: %v", names)
	}
}

// TestConversationJournalRefusesBroaderAndTruncated: a broader folder is
// refused, never repaired; a journal that lost records its last close
// recorded is refused as tampered; a bad key names no path.
func TestConversationJournalRefusesBroaderAndTruncated(t *testing.T) {
	ctx := context.Background()
	if _, _, err := journal.OpenConversation(ctx, t.TempDir(), "../x", convMeta); err == nil {
		t.Fatal("a bad key was accepted")
	}
	dir := testutil.PrivateDir(t)
	j, _, err := journal.OpenConversation(ctx, dir, convKey, convMeta)
	if err != nil {
		t.Fatal(err)
	}
	appendOne(t, j)
	appendOne(t, j)
	path := j.Path()
	if err := j.Finish(ctx, journal.StatusFinished); err != nil {
		t.Fatal(err)
	}
	journaltest.DeleteRecord(t, path, 2)
	if _, _, err := journal.OpenConversation(ctx, dir, convKey, convMeta); !errors.Is(err, journal.ErrTampered) {
		t.Fatalf("truncated journal opened: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err = journal.OpenConversation(ctx, dir, convKey, convMeta)
	if err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("broader folder = %v; want a refusal naming the fix", err)
	}
	if got := testutil.Mode(t, dir); got != 0o755 {
		t.Fatalf("the folder was repaired to %o", got)
	}
}
