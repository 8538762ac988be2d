package agentfile

import (
	"strings"
	"sync"
)

// Parser parses successive versions of one document, such as a file open
// in an editor, and re-checks only the examples whose text changed since
// the previous parse. Its Parse returns exactly what the package Parse
// returns for the same arguments; the memo only skips work whose answer is
// already known. The zero value is ready to use. A Parser is safe for
// concurrent use; its parses run one at a time.
//
// What it remembers: for each top-level item of the Examples block, keyed
// by the item's exact bytes, the examples and diagnostics its checks
// produced, with positions relative to the item. It forgets an item that
// the latest parse that reached the Examples block did not contain, and
// everything when the declared tools change (tool checks read them).
// Duplicate ids are checked over the whole list on every parse.
type Parser struct {
	mu   sync.Mutex
	memo memo
}

// Parse parses src as Parse does, reusing the checks of unchanged examples.
func (ps *Parser) Parse(name string, src []byte) Result {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := newParser(name, src)
	p.memo = &ps.memo
	p.slab.chunk = 1024
	r := p.parse()
	ps.memo.abandon()
	return r
}

// memoLimit bounds the memo: entries and bytes of entry text. A document
// bigger than this still parses correctly; the items past the limit are
// simply checked again on every parse.
const (
	memoMaxEntries = 1 << 16
	memoMaxBytes   = 64 << 20
)

// memo holds the checked entries of the last parse (prev) and those of the
// parse under way (cur); an entry of prev that the current text still
// holds moves to cur, and cur becomes prev once the parse completes the
// Examples block.
type memo struct {
	context   string
	prev, cur map[string]*memoEntry
	curBytes  int
}

// memoEntry is one checked list item: its examples, id sites and
// diagnostics, positions relative to the item's first byte and line.
type memoEntry struct {
	// key is a private copy of the item's text, so that the memo never
	// keeps a whole earlier version of the document alive.
	key      string
	examples []Example
	ids      []idSite
	diags    []Diagnostic
}

// begin starts using the memo for one Examples block; context names what
// outside the items their checks depend on.
func (m *memo) begin(context string) {
	if m == nil {
		return
	}
	if context != m.context {
		m.prev = nil
		m.context = context
	}
	m.cur, m.curBytes = map[string]*memoEntry{}, 0
}

func (m *memo) get(key string) *memoEntry {
	if m == nil {
		return nil
	}
	if e, ok := m.cur[key]; ok {
		return e
	}
	e, ok := m.prev[key]
	if !ok {
		return nil
	}
	m.keep(e)
	return e
}

func (m *memo) put(key string, e *memoEntry) {
	e.key = strings.Clone(key)
	m.keep(e)
}

func (m *memo) keep(e *memoEntry) {
	if len(m.cur) >= memoMaxEntries || m.curBytes+len(e.key) > memoMaxBytes {
		return
	}
	if _, dup := m.cur[e.key]; !dup {
		m.curBytes += len(e.key)
	}
	m.cur[e.key] = e
}

// commit makes the entries of this parse the ones the next parse reuses.
func (m *memo) commit() {
	if m == nil {
		return
	}
	m.prev, m.cur = m.cur, nil
}

// abandon drops the entries of a parse that did not complete the Examples
// block (it fell back to a whole-block decode, or never reached one), so
// the previous parse's entries stay available.
func (m *memo) abandon() {
	m.cur = nil
}
