package agentfile

import (
	"errors"
	"runtime"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// entry is one top-level item of the Examples list as text: from the start
// of the line of its "-" to the next item's "-" (or the end of the block).
// Ending at the next dash rather than at the next line start matters:
// yaml.v3 places an empty value at the token after it, which for the last
// key of an item is the next item's dash, and the whole-block decode would
// put it there too.
type entry struct {
	start, dash, end int
}

// splitEntries cuts the Examples block [start, end) into its list items
// when the block is a plain block list: its first significant line is an
// item start, every later line at that indentation is one, nothing is less
// indented, and the text has no line break that yaml.v3 counts but the
// line index does not (a lone '\r', NEL, LS, PS) nor a byte-order mark.
// Anything else (a document marker, a tag on the list, a flow list, a
// multi-line plain scalar at the list's column) returns false, and the
// block is decoded in one piece as it always was.
func (p *parser) splitEntries(start, end int) ([]entry, bool) {
	text := p.src.text[start:end]
	if !plainLineBreaks(text) {
		return nil, false
	}
	indent := -1
	var starts []int
	for _, off := range blockLines(text, start) {
		if indent >= 0 {
			// Most lines are inside an item: deeper than the list, which
			// the leading spaces alone tell.
			n := off
			for n < end && p.src.text[n] == ' ' {
				n++
			}
			if n-off > indent {
				continue
			}
		}
		l := p.lineAt(off)
		s := p.lineText(l)
		trimmed := strings.TrimLeft(s, " ")
		if trimmed == "" || trimmed[0] == '#' || strings.TrimSpace(trimmed) == "" {
			continue
		}
		n := len(s) - len(trimmed)
		switch {
		case indent < 0:
			if !isItemStart(trimmed) {
				return nil, false
			}
			indent = n
		case n > indent:
			continue
		case n < indent || !isItemStart(trimmed):
			return nil, false
		}
		starts = append(starts, l.start)
	}
	if len(starts) == 0 {
		return nil, false
	}
	entries := make([]entry, len(starts))
	for i, s := range starts {
		entries[i] = entry{start: s, dash: s + indent, end: end}
		if i+1 < len(starts) {
			entries[i].end = starts[i+1] + indent
		}
	}
	return entries, true
}

// plainLineBreaks reports whether yaml.v3 and the line index agree on the
// lines of text: yaml.v3 also breaks lines at a lone '\r' and at NEL, LS
// and PS, and skips a byte-order mark, each of which would shift the
// positions of the entries after it in a whole-block decode.
func plainLineBreaks(text string) bool {
	for from := 0; ; {
		i := strings.IndexByte(text[from:], '\r')
		if i < 0 {
			break
		}
		from += i + 1
		if from >= len(text) || text[from] != '\n' {
			return false
		}
	}
	for _, s := range []string{"\u0085", "\u2028", "\u2029", "\uFEFF"} {
		if strings.Contains(text, s) {
			return false
		}
	}
	return true
}

// examplesPerEntry checks the Examples block [start, end), already cut
// into entries, one list item at a time, and reports whether it did. An
// item whose exact text the memo holds (checked in the previous parse
// against the same declared tools) is not decoded again: its examples and
// diagnostics are replayed at its new offset. Each other item is decoded
// by yaml.v3 on its own, as a one-item list at its own offset, giving what
// a whole-block decode gives (FuzzPerEntryMatchesWholeBlock holds the two
// together).
//
// It returns false having changed nothing when decoding item by item does
// not pay (most items are new: one whole-block decode is cheaper than many
// small ones) or is not the same (an item that does not decode on its own:
// an alias to another item's anchor, a syntax error); the caller then
// decodes the whole block, which also words a syntax error as it always
// has.
func (p *parser) examplesPerEntry(entries []entry, start, end int) bool {
	type job struct {
		e    entry
		fr   fragment
		root *yaml.Node
		hit  *memoEntry
	}
	jobs := make([]job, len(entries))
	missed := 0
	for i, e := range entries {
		jobs[i].e = e
		if jobs[i].hit = p.memo.get(p.src.text[e.start:e.end]); jobs[i].hit == nil {
			missed += e.end - e.start
		}
	}
	if !p.perEntry && 2*missed > end-start {
		return false
	}
	for i := range jobs {
		j := &jobs[i]
		if j.hit != nil {
			continue
		}
		root, err := decodeEntry(p.src.text[j.e.start:j.e.end])
		if err != nil || root == nil || root.Kind != yaml.SequenceNode || root.Style&yaml.FlowStyle != 0 || len(root.Content) == 0 {
			return false
		}
		j.fr = fragment{start: j.e.start, end: j.e.end, baseLine: p.src.lineOf(j.e.start)}
		if p.dashBefore(j.fr, root.Content[0]) != j.e.dash {
			return false
		}
		j.root = root
	}
	p.agent.Examples = slices.Grow(p.agent.Examples, len(entries))
	p.exampleIDs = slices.Grow(p.exampleIDs, len(entries))
	for _, j := range jobs {
		if j.hit != nil {
			p.replay(j.hit, j.e.start)
			continue
		}
		d0, x0 := len(p.diags), len(p.agent.Examples)
		p.noMemo = false
		p.checkNodes(j.fr, j.root)
		p.items(j.fr, j.root.Content, j.e.end)
		p.remember(j.e, d0, x0)
	}
	return true
}

// itemsByEntry checks the items of a whole-block decode grouped by entry,
// so that each entry's results can be memoised, and reports whether it
// could: every item must fall in an entry, each entry's first item must
// start at the entry's dash, and no entry may be empty. Otherwise it
// changes nothing. Walking each item (rather than the root) with
// checkNodes visits the same nodes in the same order.
func (p *parser) itemsByEntry(fr fragment, items []*yaml.Node, entries []entry) bool {
	dashes := make([]int, len(items))
	first := make([]int, len(entries)+1) // index of each entry's first item
	k := -1
	for i, item := range items {
		dashes[i] = p.dashBefore(fr, item)
		for k+1 < len(entries) && dashes[i] >= entries[k+1].start {
			k++
			if dashes[i] != entries[k].dash {
				return false
			}
			first[k] = i
		}
		if k < 0 || dashes[i] >= entries[k].end {
			return false
		}
	}
	if k != len(entries)-1 {
		return false
	}
	first[len(entries)] = len(items)
	for k, e := range entries {
		d0, x0 := len(p.diags), len(p.agent.Examples)
		p.noMemo = false
		for i := first[k]; i < first[k+1]; i++ {
			p.checkNodes(fr, items[i])
		}
		for i := first[k]; i < first[k+1]; i++ {
			itemEnd := e.end
			if i+1 < len(items) {
				itemEnd = dashes[i+1]
			}
			itemEnd = dashes[i] + len(strings.TrimRight(p.src.text[dashes[i]:itemEnd], " \t\r\n"))
			p.example(fr, items[i], dashes[i], itemEnd)
		}
		p.remember(e, d0, x0)
	}
	return true
}

// chunkBytes is about how much of the Examples block the pure Parse
// decodes at a time.
const chunkBytes = 32 << 10

// examplesByChunk checks the Examples block, already cut into entries, a
// run of consecutive entries (about chunkBytes of text) at a time, and
// reports whether it did. yaml.v3 builds a node tree many times the size of
// the text: decoding a large block in one piece holds the whole tree at
// once (about 8 MB for 2,000 short examples, which set kmx test's peak
// memory), where a chunk's tree is garbage as soon as its items are
// checked. The work is the same as one whole-block decode, plus one
// decoder per chunk.
//
// Each chunk is decoded as a list at its own offset, as examplesPerEntry
// decodes one item, and itemsByEntry checks that its items fall in its
// entries and checks them. A chunk that does not decode on its own (an
// alias to an anchor in an earlier chunk, a syntax error) or whose items do
// not match its entries takes back everything the chunks before it added
// and returns false; the caller then decodes the whole block, which also
// words a syntax error as it always has.
func (p *parser) examplesByChunk(entries []entry) bool {
	// The slices as they were, to take back what the chunks added: their
	// headers, not their lengths, so a list that was nil is nil again (an
	// empty list and none encode differently).
	diags0, examples0, ids0 := p.diags, p.agent.Examples, p.exampleIDs
	size := chunkBytes
	if p.chunkBytes > 0 {
		size = p.chunkBytes
	}
	var spans [][2]int // each chunk's entries, [i, k)
	for i := 0; i < len(entries); {
		k := i + 1
		for k < len(entries) && entries[k].end-entries[i].start <= size {
			k++
		}
		spans = append(spans, [2]int{i, k})
		i = k
	}
	text := func(s [2]int) string { return p.src.text[entries[s[0]].start:entries[s[1]-1].end] }
	stop := make(chan struct{})
	defer close(stop)
	next := decodeAhead(spans, text, stop)
	for _, s := range spans {
		i, k := s[0], s[1]
		fr := fragment{start: entries[i].start, end: entries[k-1].end, baseLine: p.src.lineOf(entries[i].start)}
		d := next()
		root := d.root
		if d.err != nil || root == nil || root.Kind != yaml.SequenceNode || root.Style&yaml.FlowStyle != 0 || len(root.Content) == 0 ||
			!p.itemsByEntry(fr, root.Content, entries[i:k]) {
			p.diags, p.agent.Examples, p.exampleIDs = diags0, examples0, ids0
			p.chunks = 0
			return false
		}
		p.chunks++
	}
	return true
}

// decodedChunk is one chunk's decode: decodeEntry's results.
type decodedChunk struct {
	root *yaml.Node
	err  error
}

// decodeAhead returns the chunks' decodes in order, one per call. With more
// than one chunk and more than one processor, goroutines decode the chunks
// ahead while the caller checks the current one (decodeEntry reads only
// the chunk's text): one per processor, chunk i on goroutine i modulo
// their number, each handing its chunks over in order on its own
// unbuffered channel. So a large file's parse takes about its decoding
// shared among the processors, or the checks, whichever is longer,
// instead of their sum; and at most two trees per goroutine are alive
// (one handed over, one being built) besides the one being checked. The
// goroutines end when stop is closed, so a caller that gives up early (a
// chunk that does not decode alone) leaves nothing running.
func decodeAhead(spans [][2]int, text func([2]int) string, stop <-chan struct{}) func() decodedChunk {
	n := 0
	workers := min(runtime.GOMAXPROCS(0), len(spans))
	if workers < 2 {
		return func() decodedChunk {
			root, err := decodeEntry(text(spans[n]))
			n++
			return decodedChunk{root, err}
		}
	}
	outs := make([]chan decodedChunk, workers)
	for w := range outs {
		out := make(chan decodedChunk)
		outs[w] = out
		go func() {
			for i := w; i < len(spans); i += workers {
				root, err := decodeEntry(text(spans[i]))
				select {
				case out <- decodedChunk{root, err}:
				case <-stop:
					return
				}
			}
		}()
	}
	return func() decodedChunk {
		c := <-outs[n%workers]
		n++
		return c
	}
}

// remember memoises what the checks of entry e added (diagnostics from d0,
// examples from x0), unless they depend on more than its text.
func (p *parser) remember(e entry, d0, x0 int) {
	if p.memo != nil && !p.noMemo {
		p.memo.put(p.src.text[e.start:e.end], p.capture(e.start, d0, x0))
	}
}

// decodeEntry decodes one list item's text. It uses yaml.Unmarshal, which
// reads only the first document and, unlike a Decoder, copies neither the
// text nor a reader buffer; so a text holding anything at column 0 that
// could start another document ("---", "...", a "%" directive) is refused
// here and left to the whole-block decode, which refuses a second document.
func decodeEntry(text string) (root *yaml.Node, err error) {
	for _, marker := range []string{"\n---", "\n...", "\n%"} {
		if strings.Contains(text, marker) {
			return nil, errors.New("a line may start another YAML document")
		}
	}
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, errors.New("yaml: the YAML parser failed on this item")
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// toolContext names everything outside an entry's text that its checks
// read: whether the tool declaration could be read, and the declared names.
func (p *parser) toolContext() string {
	if p.memo == nil {
		return ""
	}
	if !p.toolsKnown {
		return "\x00unknown"
	}
	names := make([]string, 0, len(p.declared))
	for n := range p.declared {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, "\n")
}

// capture copies what the checks of the entry at start added (examples
// from x0, diagnostics from d0) with positions made relative to the entry.
func (p *parser) capture(start, d0, x0 int) *memoEntry {
	d := Position{Offset: -start, Line: -p.src.lineOf(start)}
	e := &memoEntry{
		examples: make([]Example, 0, len(p.agent.Examples)-x0),
		ids:      make([]idSite, 0, len(p.agent.Examples)-x0),
		diags:    make([]Diagnostic, 0, len(p.diags)-d0),
	}
	for i := x0; i < len(p.agent.Examples); i++ {
		e.examples = append(e.examples, shiftExample(p.agent.Examples[i], d))
		s := p.exampleIDs[i]
		e.ids = append(e.ids, idSite{id: s.id, r: shiftRange(s.r, d)})
	}
	for _, dg := range p.diags[d0:] {
		dg.Range = shiftRange(dg.Range, d)
		e.diags = append(e.diags, dg)
	}
	return e
}

// replay adds a memoised entry's results at the entry's offset start. An
// entry starts at a line start, so only offsets and lines move; UTF-16
// columns stay as they were.
func (p *parser) replay(e *memoEntry, start int) {
	d := Position{Offset: start, Line: p.src.lineOf(start)}
	for i, ex := range e.examples {
		p.agent.Examples = append(p.agent.Examples, p.slab.shiftExample(ex, d))
		p.exampleIDs = append(p.exampleIDs, idSite{id: e.ids[i].id, r: shiftRange(e.ids[i].r, d)})
	}
	for _, dg := range e.diags {
		dg.Range = shiftRange(dg.Range, d)
		p.diags = append(p.diags, dg)
	}
}

func shiftRange(r Range, d Position) Range {
	r.Start.Offset += d.Offset
	r.Start.Line += d.Line
	r.End.Offset += d.Offset
	r.End.Line += d.Line
	return r
}

// shiftExample moves an example by d, copying everything it points to so
// that no two Results (nor a Result and the memo) share memory a caller
// could change.
func shiftExample(ex Example, d Position) Example {
	var s slab // zero chunk: exact allocations, for a memo entry that lives long
	return s.shiftExample(ex, d)
}

// slab hands out the slices that replayed examples need from a few large
// allocations rather than several small ones per example; each piece is
// capped at its length, so appending to one never writes into another.
type slab struct {
	// chunk is the size of each refill; zero allocates exactly what each
	// example needs.
	chunk      int
	assertions []Assertion
	thresholds []int
	tools      []ToolRecording
	calls      []RecordedCall
}

func (s *slab) shiftExample(ex Example, d Position) Example {
	ex.Range = shiftRange(ex.Range, d)
	ex.FullRange = shiftRange(ex.FullRange, d)
	ex.Assertions = s.shiftAssertions(ex.Assertions, d)
	if ex.Turns != nil {
		turns := make([]Turn, len(ex.Turns))
		for i, t := range ex.Turns {
			t.Range = shiftRange(t.Range, d)
			t.Assertions = s.shiftAssertions(t.Assertions, d)
			turns[i] = t
		}
		ex.Turns = turns
	}
	if ex.Tools != nil {
		ts := take(&s.tools, len(ex.Tools), s.chunk)
		for i, t := range ex.Tools {
			t.Range = shiftRange(t.Range, d)
			t.CallsRange = shiftRange(t.CallsRange, d)
			if t.Calls != nil {
				t.Calls = append(take(&s.calls, len(t.Calls), s.chunk)[:0], t.Calls...)
			}
			ts[i] = t
		}
		ex.Tools = ts
	}
	return ex
}

// shiftAssertions moves a list of assertions by d, copying it.
func (s *slab) shiftAssertions(list []Assertion, d Position) []Assertion {
	if list == nil {
		return nil
	}
	as := take(&s.assertions, len(list), s.chunk)
	for i, a := range list {
		a.Range = shiftRange(a.Range, d)
		if a.ops != nil {
			o := *a.ops
			if o.Threshold != nil {
				t := &take(&s.thresholds, 1, s.chunk)[0]
				*t = *o.Threshold
				o.Threshold = t
			}
			if o.Min != nil {
				n := *o.Min
				o.Min = &n
			}
			if o.Max != nil {
				n := *o.Max
				o.Max = &n
			}
			if o.Names != nil {
				o.Names = append([]string(nil), o.Names...)
			}
			if o.Paths != nil {
				o.Paths = append([]string{}, o.Paths...)
			}
			a.ops = &o
		}
		as[i] = a
	}
	return as
}

// take cuts n elements off the front of *pool, refilling it with
// max(n, chunk) when short. The result is never nil, so an empty list
// stays an empty list (JSON [] rather than null).
func take[T any](pool *[]T, n, chunk int) []T {
	if len(*pool) < n || *pool == nil {
		*pool = make([]T, max(n, chunk))
	}
	out := (*pool)[:n:n]
	*pool = (*pool)[n:]
	return out
}
