package lsp

import (
	"errors"
	"sync"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
)

// store owns the open documents: the map, its lock, and the order in which
// their diagnostics are published. It is the only code that reads or
// writes a document; handlers open, change and close documents through
// it and read them as snapshots. Like buf's file manager, and gopls's
// immutable snapshots, the store decides nothing about an agent file: it
// keeps text and versions, and parses through the function it was given.
type store struct {
	// parse parses a snapshot's text (Server.parseDoc: pairs, the
	// document's own Parser, Options.Parse).
	parse func(snapshot) agentfile.Result

	// publishMu makes "is this still the newest version?" and the send of
	// its diagnostics one step, so an older parse can never be sent after
	// a newer one, nor after the document closed.
	publishMu sync.Mutex

	mu   sync.Mutex
	docs map[string]*document
}

// document is one open text document as the store holds it.
type document struct {
	uri     string
	version int32
	// text is never modified in place: a change replaces it, so
	// snapshots share it without copying.
	text []byte
	// result caches the parse of this version (nil until diagnosed).
	result *agentfile.Result
	// parser is this document's own agentfile.Parser, kept across
	// changes, so a keystroke re-checks only the examples it touched.
	parser *agentfile.Parser
	// checking is set while a check loop runs for this document; pending
	// asks it to run again on the newest text.
	checking, pending bool
	// dirty: the text changed since the client opened or last saved it,
	// so it is being typed (an examples file cut at its end may be an
	// example still being written); a document as opened or saved is
	// the file, complete.
	dirty bool
}

// snapshot is an immutable view of one open document at one version: its
// text, version and (through file) its parse. Its text must not be
// modified; copy it before handing it to code that might.
type snapshot struct {
	uri     string
	version int32
	text    []byte
	// dirty: the document has changes the client has not saved.
	dirty bool
	// parsed is the cached parse of this version, nil when diagnostics
	// have not run on it yet.
	parsed *agentfile.Result
	parser *agentfile.Parser
	parse  func(snapshot) agentfile.Result
}

// file returns the parse of the snapshot's text: the cached one when
// diagnostics already ran on this version, else a parse made now.
func (v snapshot) file() agentfile.Result {
	if v.parsed != nil {
		return *v.parsed
	}
	return v.parse(v)
}

// errNotOpen is change's answer for a document the client never opened
// (or already closed).
var errNotOpen = errors.New("the document is not open")

func newStore(parse func(snapshot) agentfile.Result) *store {
	return &store{parse: parse, docs: map[string]*document{}}
}

// view is doc's snapshot; the caller holds mu.
func (st *store) view(doc *document) snapshot {
	return snapshot{uri: doc.uri, version: doc.version, text: doc.text, dirty: doc.dirty, parsed: doc.result, parser: doc.parser, parse: st.parse}
}

// open stores a document the client opened, replacing one of the same URI.
func (st *store) open(uri string, version int32, text []byte) {
	doc := &document{uri: uri, version: version, text: text, parser: &agentfile.Parser{}}
	st.mu.Lock()
	st.docs[uri] = doc
	st.mu.Unlock()
}

// change applies the client's changes in order and moves the document to
// version. A change that does not fit the text held means the client and
// server disagree: the document is dropped and the error says why.
func (st *store) change(uri string, version int32, changes []contentChange) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	doc, ok := st.docs[uri]
	if !ok {
		return errNotOpen
	}
	text, err := applyChanges(doc.text, changes)
	if err != nil {
		delete(st.docs, uri)
		return err
	}
	doc.text = text
	doc.version = version
	doc.result = nil
	doc.dirty = true
	return nil
}

// saved marks uri as saved (its text is the file's) and drops its cached
// parse, which read it as being typed; it reports whether uri is open.
func (st *store) saved(uri string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	doc, ok := st.docs[uri]
	if ok {
		doc.dirty, doc.result = false, nil
	}
	return ok
}

// close forgets the document, then runs cleared (which clears its
// diagnostics) in publish order, so no older publish can follow it.
func (st *store) close(uri string, cleared func()) {
	st.publishMu.Lock()
	defer st.publishMu.Unlock()
	st.mu.Lock()
	delete(st.docs, uri)
	st.mu.Unlock()
	cleared()
}

// snapshot returns the current view of an open document.
func (st *store) snapshot(uri string) (snapshot, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	doc, ok := st.docs[uri]
	if !ok {
		return snapshot{}, false
	}
	return st.view(doc), true
}

// snapshotAt returns the view of the open document whose file is path.
func (st *store) snapshotAt(path string) (snapshot, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for uri, doc := range st.docs {
		if uriPath(uri) == path {
			return st.view(doc), true
		}
	}
	return snapshot{}, false
}

// uris lists the open documents.
func (st *store) uris() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]string, 0, len(st.docs))
	for uri := range st.docs {
		out = append(out, uri)
	}
	return out
}

// invalidate drops the cached parse of uri (a file it depends on changed)
// and reports whether uri is open.
func (st *store) invalidate(uri string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	doc, ok := st.docs[uri]
	if ok {
		doc.result = nil
	}
	return ok
}

// check runs fn on the newest snapshot of uri on its own goroutine, at
// most one fn per document at a time: a check asked for while one runs
// marks the document pending, and the running loop then runs fn again on
// the newest text. So typing into a large file never queues a parse per
// keystroke, and the last version is always the one checked.
func (st *store) check(uri string, fn func(snapshot)) {
	st.mu.Lock()
	doc, ok := st.docs[uri]
	if !ok {
		st.mu.Unlock()
		return
	}
	if doc.checking {
		doc.pending = true
		st.mu.Unlock()
		return
	}
	doc.checking = true
	v := st.view(doc)
	st.mu.Unlock()
	go func() {
		for {
			fn(v)
			st.mu.Lock()
			if st.docs[uri] != doc || !doc.pending {
				// Closed (or reopened, which checks itself), or nothing newer.
				doc.checking = false
				st.mu.Unlock()
				return
			}
			doc.pending = false
			v = st.view(doc)
			st.mu.Unlock()
		}
	}()
}

// publish runs send if, at publish time, v is still the newest version of
// an open document (and it was not saved since: a save changes how an
// examples file reads), and caches res as that version's parse. The check and
// the send are one step, so an older result can never follow a newer one.
func (st *store) publish(v snapshot, res agentfile.Result, send func()) bool {
	st.publishMu.Lock()
	defer st.publishMu.Unlock()
	st.mu.Lock()
	doc, ok := st.docs[v.uri]
	current := ok && doc.version == v.version && doc.dirty == v.dirty
	if current {
		doc.result = &res
	}
	st.mu.Unlock()
	if current {
		send()
	}
	return current
}
