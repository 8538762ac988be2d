package lsp

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

func countingStore(parses *int) *store {
	return newStore(func(v snapshot) agentfile.Result {
		*parses++
		return agentfile.Parse(uriPath(v.uri), v.text)
	})
}

func TestStoreOpenChangeCloseSnapshot(t *testing.T) {
	parses := 0
	st := countingStore(&parses)
	const uri = "file:///w/a.agent.md"
	if _, ok := st.snapshot(uri); ok {
		t.Fatal("snapshot of a document never opened")
	}
	if err := st.change(uri, 2, nil); !errors.Is(err, errNotOpen) {
		t.Fatalf("change of a closed document: %v, want errNotOpen", err)
	}
	st.open(uri, 1, []byte("hello\nworld\n"))
	before, ok := st.snapshot(uri)
	if !ok || before.version != 1 || string(before.text) != "hello\nworld\n" {
		t.Fatalf("after open: %+v %v", before, ok)
	}
	if err := st.change(uri, 2, []contentChange{{Range: &lspRange{Start: lspPosition{Line: 1}, End: lspPosition{Line: 1, Character: 5}}, Text: "there"}}); err != nil {
		t.Fatal(err)
	}
	after, _ := st.snapshot(uri)
	if after.version != 2 || string(after.text) != "hello\nthere\n" {
		t.Fatalf("after change: version %d text %q", after.version, after.text)
	}
	// A snapshot is immutable: the change did not reach the older view.
	if before.version != 1 || string(before.text) != "hello\nworld\n" {
		t.Fatalf("the older snapshot changed: version %d text %q", before.version, before.text)
	}
	if at, ok := st.snapshotAt("/w/a.agent.md"); !ok || at.version != 2 {
		t.Fatalf("snapshotAt: %+v %v", at, ok)
	}
	if got := st.uris(); !slices.Equal(got, []string{uri}) {
		t.Fatalf("uris %v", got)
	}
	cleared := false
	st.close(uri, func() { cleared = true })
	if _, ok := st.snapshot(uri); ok || !cleared {
		t.Fatalf("after close: open %v, cleared %v", ok, cleared)
	}
}

func TestStoreDropsADocumentWhoseChangeDoesNotFit(t *testing.T) {
	st := countingStore(new(int))
	const uri = "file:///w/a.agent.md"
	st.open(uri, 1, []byte("one line"))
	err := st.change(uri, 2, []contentChange{{Range: &lspRange{Start: lspPosition{Line: 5}, End: lspPosition{Line: 5}}, Text: "x"}})
	if err == nil || errors.Is(err, errNotOpen) {
		t.Fatalf("change past the end: %v, want a range error", err)
	}
	if _, ok := st.snapshot(uri); ok {
		t.Fatal("a document the client and server disagree on is still open")
	}
}

func TestStorePublishesOnlyTheNewestVersionAndCachesItsParse(t *testing.T) {
	parses := 0
	st := countingStore(&parses)
	const uri = "file:///w/a.agent.md"
	st.open(uri, 1, []byte("# one\n"))
	old, _ := st.snapshot(uri)
	if err := st.change(uri, 2, []contentChange{{Text: "# two\n"}}); err != nil {
		t.Fatal(err)
	}
	if st.publish(old, agentfile.Result{}, func() { t.Error("an older version was sent") }) {
		t.Fatal("publish of version 1 after version 2 arrived reported sent")
	}
	cur, _ := st.snapshot(uri)
	res := cur.file()
	if parses != 1 {
		t.Fatalf("%d parses before publish, want 1", parses)
	}
	sent := false
	if !st.publish(cur, res, func() { sent = true }) || !sent {
		t.Fatal("the newest version was not sent")
	}
	again, _ := st.snapshot(uri)
	again.file()
	if parses != 1 {
		t.Fatalf("%d parses after publish, want the cached parse (1)", parses)
	}
	if !st.invalidate(uri) {
		t.Fatal("invalidate: the document is open")
	}
	stale, _ := st.snapshot(uri)
	stale.file()
	if parses != 2 {
		t.Fatalf("%d parses after invalidate, want a fresh one (2)", parses)
	}
	st.close(uri, func() {})
	if st.publish(cur, res, func() { t.Error("a closed document was sent") }) {
		t.Fatal("publish after close reported sent")
	}
}

// A check asked for while one runs is coalesced into one more run, on the
// newest text.
func TestStoreCheckRunsOneAtATimeOnTheNewestText(t *testing.T) {
	st := countingStore(new(int))
	const uri = "file:///w/a.agent.md"
	st.open(uri, 1, []byte("v1"))
	entered := make(chan int32)
	proceed := make(chan struct{})
	var mu sync.Mutex
	var seen []int32
	done := make(chan struct{})
	fn := func(v snapshot) {
		mu.Lock()
		seen = append(seen, v.version)
		n := len(seen)
		mu.Unlock()
		if n == 1 {
			entered <- v.version
			<-proceed
		}
		if n == 2 {
			close(done)
		}
	}
	st.check(uri, fn)
	<-entered
	for v := int32(2); v <= 4; v++ {
		if err := st.change(uri, v, []contentChange{{Text: "v"}}); err != nil {
			t.Fatal(err)
		}
		st.check(uri, fn)
	}
	close(proceed)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []int32{1, 4}) {
		t.Fatalf("checked versions %v, want [1 4]", seen)
	}
}
