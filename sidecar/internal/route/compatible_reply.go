package route

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxReplyDepth bounds object/array nesting in a reply. A Chat Completions
// reply is four levels deep; anything far deeper is not one.
const maxReplyDepth = 64

// DecodeReply strictly decodes a non-streaming Chat Completions reply body
// and returns its one answer. wantModel is the model that was requested: the
// reply must name exactly it.
//
// The whole body is walked token by token first, so problems anywhere (also
// in fields kmx otherwise ignores) refuse the reply: malformed or truncated
// JSON, invalid UTF-8, trailing data, a key repeated in one object exactly or
// as a case-insensitive alias (the aliasing encoding/json would silently
// merge), a tool or function call in any key spelling, and a non-empty
// refusal. Then exactly one choice with finish_reason "stop" and non-empty
// string content is required. Fields are read by their exact lower-case
// names only. Every refusal is a *ReplyError naming only the class.
//
// The walk is one pass of kmx's own scanner over the body: it follows
// encoding/json's grammar and its Decoder's token order (so the first
// problem in the body decides the refusal, as with the Decoder), and notes
// where the few fields kmx reads are while it goes, so nothing is scanned
// twice. The reference it is held to, byte for byte in its results and its
// error text, is the Decoder-based walk plus json.Unmarshal it replaced (kept
// in compatible_reply_ref_test.go and checked by a differential fuzz target).
func DecodeReply(body []byte, wantModel string) (Completion, error) {
	if !utf8.Valid(body) {
		return Completion{}, replyErr(ClassMalformed, "the body is not valid UTF-8")
	}
	var w replyWalk
	w.init(body, walkReply)
	if err := w.walk(); err != nil {
		return Completion{}, err
	}
	return w.fields.completion(body, wantModel)
}

// errTruncated is the refusal of a body that ends inside its JSON: between
// tokens (the Decoder's io.EOF) or inside a value (io.ErrUnexpectedEOF).
func errTruncated() error {
	return replyErr(ClassMalformed, "the body ends before its JSON is complete (truncated)")
}

// errInvalid is the refusal of a byte the grammar does not allow where it
// stands (the Decoder's SyntaxError, never quoted: it repeats the byte).
func errInvalid() error {
	return replyErr(ClassMalformed, "the body is not valid JSON")
}

// tokenKind is one token of the JSON token stream.
type tokenKind uint8

const (
	tokObjectOpen tokenKind = iota + 1
	tokObjectClose
	tokArrayOpen
	tokArrayClose
	tokKey
	tokString
	tokNumber
	tokTrue
	tokFalse
	tokNull
)

// tokenState is where the scanner is in the grammar; the states and their
// transitions are encoding/json's Decoder.Token ones, so the same byte is
// refused at the same point.
type tokenState uint8

const (
	stateTopValue tokenState = iota
	stateArrayStart
	stateArrayValue
	stateArrayComma
	stateObjectStart
	stateObjectKey
	stateObjectColon
	stateObjectValue
	stateObjectComma
)

// token is one token: its kind and, for keys and scalar values, its bytes in
// the body (a string's quotes included). escaped marks a string holding a
// backslash escape, which must be decoded before it is compared.
type token struct {
	kind       tokenKind
	start, end int
	escaped    bool
}

// fieldID names the few keys kmx reads, by their exact decoded names.
type fieldID uint8

const (
	fieldOther fieldID = iota
	fieldModel
	fieldChoices
	fieldFinishReason
	fieldMessage
	fieldRole
	fieldContent
	fieldToolCalls
	fieldUsage
	fieldPromptTokens
	fieldCompletionTokens
	fieldTotalTokens
)

// frameRole says which of the objects kmx reads fields from a container is.
type frameRole uint8

const (
	roleOther     frameRole = iota
	roleTop                 // the reply object
	roleChoices             // the reply's "choices" array
	roleChoice              // that array's first element
	roleMessage             // that element's "message" object
	roleToolCalls           // that message's "tool_calls" array (tool path)
	roleUsage               // the reply's "usage" object
)

// value is what the walk noted about one field kmx reads: the kind of its
// value (0 when absent) and, for a scalar, its bytes in the body.
type value struct {
	kind       tokenKind
	start, end int
	escaped    bool
}

// text returns a string value decoded exactly as encoding/json would: the
// body's own bytes when it has no escape (nothing is copied).
func (v value) text(body []byte) []byte {
	if !v.escaped {
		return body[v.start+1 : v.end-1]
	}
	return unquote(body[v.start:v.end])
}

// is reports whether v is a string that decodes to exactly s.
func (v value) is(body []byte, s string) bool {
	return v.kind == tokString && string(v.text(body)) == s
}

// replyFields are the fields DecodeReply checks, noted during the walk. The
// walk refuses repeated keys, so each is seen at most once.
type replyFields struct {
	model        value
	choices      value
	choiceCount  int
	choice       value // the first element of choices
	finishReason value
	message      value
	role         value
	content      value
	// toolCalls is the message's tool_calls value on the tool path; for an
	// array, end is just past its ']'.
	toolCalls value
	usage     value
	// promptTokens, completionTokens and totalTokens are usage's.
	promptTokens, completionTokens, totalTokens value
}

// completion applies the reply rules, in the order and with the wording
// they have always had, to the fields of a body the walk accepted.
func (f *replyFields) completion(body []byte, wantModel string) (Completion, error) {
	finish, err := f.choiceFinish(body, wantModel)
	if err != nil {
		return Completion{}, err
	}
	switch {
	case f.finishReason.kind != tokString:
		// Strict: a reply that does not say it stopped on its own may have
		// been cut off, so a missing or null finish_reason is refused too.
		return Completion{}, replyErr(ClassFinishReason, "")
	case string(finish) == "stop":
	case string(finish) == "length":
		return Completion{}, replyErr(ClassTruncated, "")
	case string(finish) == "content_filter":
		return Completion{}, replyErr(ClassContentFilter, "")
	case string(finish) == "tool_calls" || string(finish) == "function_call":
		return Completion{}, replyErr(ClassToolCall, "")
	default:
		return Completion{}, replyErr(ClassFinishReason, "")
	}
	if err := f.assistantMessage(body); err != nil {
		return Completion{}, err
	}
	if f.content.kind != tokString {
		return Completion{}, replyErr(ClassContent, "")
	}
	content := string(f.content.text(body))
	if strings.TrimSpace(content) == "" {
		return Completion{}, replyErr(ClassContent, "")
	}
	return Completion{Model: wantModel, Text: content, FinishReason: "stop", Usage: f.tokenUsage(body)}, nil
}

// tokenUsage is the reply's usage when it reports one: a "usage" object
// whose prompt_tokens, completion_tokens and total_tokens are all whole
// numbers (digits only, at most 15). Anything else reports none: a budget
// on tokens is then unknown, and the answer is not refused for it.
func (f *replyFields) tokenUsage(body []byte) *Usage {
	if f.usage.kind != tokObjectOpen {
		return nil
	}
	var u Usage
	for _, c := range []struct {
		v   value
		dst *int
	}{{f.promptTokens, &u.PromptTokens}, {f.completionTokens, &u.CompletionTokens}, {f.totalTokens, &u.TotalTokens}} {
		n, ok := wholeTokens(c.v, body)
		if !ok {
			return nil
		}
		*c.dst = n
	}
	return &u
}

// wholeTokens reads a usage count: a JSON number of 1 to 15 digits with no
// sign, fraction, exponent or leading zero.
func wholeTokens(v value, body []byte) (int, bool) {
	if v.kind != tokNumber {
		return 0, false
	}
	digits := body[v.start:v.end]
	if len(digits) == 0 || len(digits) > 15 || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// choiceFinish applies the rules both paths share up to the finish
// reason: exactly the requested model, one choice that is an object. It
// returns the finish reason's text (nil when it is not a string, which
// each path refuses in its own switch).
func (f *replyFields) choiceFinish(body []byte, wantModel string) ([]byte, error) {
	if f.model.kind != tokString || wantModel == "" || !f.model.is(body, wantModel) {
		return nil, replyErr(ClassModel, "")
	}
	if f.choices.kind != tokArrayOpen || f.choiceCount != 1 {
		return nil, replyErr(ClassChoices, "")
	}
	if f.choice.kind != tokObjectOpen {
		return nil, replyErr(ClassChoices, "the choice is not an object")
	}
	if f.finishReason.kind != tokString {
		return nil, nil
	}
	return f.finishReason.text(body), nil
}

// assistantMessage checks that the choice has a message object whose role,
// when given, is "assistant".
func (f *replyFields) assistantMessage(body []byte) error {
	if f.message.kind != tokObjectOpen {
		return replyErr(ClassContent, "the choice has no message object")
	}
	if f.role.kind != 0 && !f.role.is(body, "assistant") {
		return replyErr(ClassContent, `the message role is not "assistant"`)
	}
	return nil
}

// walkFrame is one open container during the walk.
type walkFrame struct {
	object  bool
	wantKey bool // in an object: the next token is a key or '}'
	role    frameRole
	field   fieldID // in an object: the key whose value comes next
	count   int     // in an array: the elements seen so far
	// keysFrom is where this object's keys start in replyWalk.keys.
	keysFrom int
	// folded holds this object's folded keys once it has more than
	// foldSetAfter of them, so a huge object is not compared pair by pair.
	folded map[string]struct{}
}

// foldSetAfter is how many keys an object may have before its duplicate
// check switches from comparing pairs to a set of folded keys.
const foldSetAfter = 16

// walkKey is one key of an open object, decoded.
type walkKey struct {
	name  []byte
	ascii bool
}

// replyWalk is the single-pass scanner. containers mirrors the Decoder's
// token stack (true for an object); frames are the walk's own, as the
// Decoder-based walk kept them. Both live in fixed arrays (the depth bound
// keeps them small) so a walk allocates nothing for them.
type replyWalk struct {
	body   []byte
	pos    int
	state  tokenState
	mode   walkMode
	fields replyFields

	containers  [maxReplyDepth + 2]bool
	nContainers int
	frames      [maxReplyDepth]walkFrame
	nFrames     int
	// keys are the decoded keys of the open objects, innermost last: the
	// first len(keysHead) in keysHead, the rest in keysMore.
	keysHead [32]walkKey
	keysMore []walkKey
	nKeys    int
}

func (w *replyWalk) init(body []byte, mode walkMode) {
	w.body = body
	w.mode = mode
}

// walkMode is what a walk checks besides the grammar and repeated keys.
type walkMode uint8

const (
	// walkReply: a tool-free reply. A tool or function call anywhere, a
	// refusal or a top-level error refuses it.
	walkReply walkMode = iota
	// walkToolReply: a reply on the tool path. As walkReply, except that the
	// first choice's message may carry "tool_calls" (that exact key), whose
	// value is walked like any other and checked afterwards.
	walkToolReply
	// walkPlain: any JSON object (a tool call's arguments): only the
	// grammar, the depth and repeated or aliased keys are checked.
	walkPlain
)

// keyAt returns the i-th open key.
func (w *replyWalk) keyAt(i int) *walkKey {
	if i < len(w.keysHead) {
		return &w.keysHead[i]
	}
	return &w.keysMore[i-len(w.keysHead)]
}

// pushKey appends an open key.
func (w *replyWalk) pushKey(k walkKey) {
	if w.nKeys < len(w.keysHead) {
		w.keysHead[w.nKeys] = k
	} else {
		more := w.nKeys - len(w.keysHead)
		w.keysMore = append(w.keysMore[:more], k)
	}
	w.nKeys++
}

// isSpace is JSON's whitespace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// valueAllowed mirrors Decoder.tokenValueAllowed.
func (w *replyWalk) valueAllowed() bool {
	switch w.state {
	case stateTopValue, stateArrayStart, stateArrayValue, stateObjectValue:
		return true
	}
	return false
}

// valueEnd mirrors Decoder.tokenValueEnd.
func (w *replyWalk) valueEnd() {
	switch w.state {
	case stateArrayStart, stateArrayValue:
		w.state = stateArrayComma
	case stateObjectValue:
		w.state = stateObjectComma
	}
}

// popContainer restores the state of the enclosing container after a
// close, as the Decoder does from its token stack.
func (w *replyWalk) popContainer() {
	w.nContainers--
	switch {
	case w.nContainers == 0:
		w.state = stateTopValue
	case w.containers[w.nContainers-1]:
		w.state = stateObjectComma
	default:
		w.state = stateArrayComma
	}
}

// next returns the next token, following Decoder.Token: whitespace, ':' and
// ',' are consumed between tokens, and a byte the grammar does not allow
// where it stands is refused as invalid JSON. The end of the body between
// tokens or inside a value is truncation.
func (w *replyWalk) next() (token, error) {
	body := w.body
	for {
		for w.pos < len(body) && isSpace(body[w.pos]) {
			w.pos++
		}
		if w.pos >= len(body) {
			return token{}, errTruncated()
		}
		c := body[w.pos]
		switch c {
		case '[', '{':
			if !w.valueAllowed() {
				return token{}, errInvalid()
			}
			if w.nContainers == len(w.containers) {
				// Unreachable: the walk refuses nesting past maxReplyDepth
				// before the containers run out.
				return token{}, replyErr(ClassMalformed, "the JSON is nested too deeply")
			}
			w.pos++
			w.containers[w.nContainers] = c == '{'
			w.nContainers++
			if c == '{' {
				w.state = stateObjectStart
				return token{kind: tokObjectOpen}, nil
			}
			w.state = stateArrayStart
			return token{kind: tokArrayOpen}, nil
		case ']':
			if w.state != stateArrayStart && w.state != stateArrayComma {
				return token{}, errInvalid()
			}
			w.pos++
			w.popContainer()
			return token{kind: tokArrayClose}, nil
		case '}':
			if w.state != stateObjectStart && w.state != stateObjectComma {
				return token{}, errInvalid()
			}
			w.pos++
			w.popContainer()
			return token{kind: tokObjectClose}, nil
		case ':':
			if w.state != stateObjectColon {
				return token{}, errInvalid()
			}
			w.pos++
			w.state = stateObjectValue
			continue
		case ',':
			switch w.state {
			case stateArrayComma:
				w.pos++
				w.state = stateArrayValue
				continue
			case stateObjectComma:
				w.pos++
				w.state = stateObjectKey
				continue
			}
			return token{}, errInvalid()
		case '"':
			if w.state == stateObjectStart || w.state == stateObjectKey {
				tok, err := w.scanString()
				if err != nil {
					return token{}, err
				}
				tok.kind = tokKey
				w.state = stateObjectColon
				return tok, nil
			}
		}
		if !w.valueAllowed() {
			return token{}, errInvalid()
		}
		tok, err := w.scanScalar()
		if err != nil {
			return token{}, err
		}
		w.valueEnd()
		return tok, nil
	}
}

// scanScalar reads one string, number or literal starting at w.pos, by
// encoding/json's scanner rules: a byte that cannot continue the value is
// invalid JSON, the body ending inside it is truncation, and the byte after
// a complete value is left for the next token.
func (w *replyWalk) scanScalar() (token, error) {
	body, start := w.body, w.pos
	switch c := body[start]; {
	case c == '"':
		return w.scanString()
	case c == 't':
		return w.scanLiteral("true", tokTrue)
	case c == 'f':
		return w.scanLiteral("false", tokFalse)
	case c == 'n':
		return w.scanLiteral("null", tokNull)
	case c == '-' || ('0' <= c && c <= '9'):
		return w.scanNumber()
	}
	return token{}, errInvalid()
}

func (w *replyWalk) scanLiteral(lit string, kind tokenKind) (token, error) {
	start := w.pos
	for i := 0; i < len(lit); i++ {
		if start+i >= len(w.body) {
			return token{}, errTruncated()
		}
		if w.body[start+i] != lit[i] {
			return token{}, errInvalid()
		}
	}
	w.pos = start + len(lit)
	return token{kind: kind, start: start, end: w.pos}, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (w *replyWalk) scanNumber() (token, error) {
	body, start := w.body, w.pos
	i := start
	// at reports the byte at i, or that the body ended inside the number.
	at := func(i int) (byte, bool) {
		if i >= len(body) {
			return 0, false
		}
		return body[i], true
	}
	if body[i] == '-' {
		i++
	}
	c, ok := at(i)
	switch {
	case !ok:
		return token{}, errTruncated()
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		for i++; i < len(body) && isDigit(body[i]); i++ {
		}
	default:
		return token{}, errInvalid()
	}
	if i < len(body) && body[i] == '.' {
		i++
		c, ok := at(i)
		if !ok {
			return token{}, errTruncated()
		}
		if !isDigit(c) {
			return token{}, errInvalid()
		}
		for i++; i < len(body) && isDigit(body[i]); i++ {
		}
	}
	if i < len(body) && (body[i] == 'e' || body[i] == 'E') {
		i++
		c, ok := at(i)
		if ok && (c == '+' || c == '-') {
			i++
			c, ok = at(i)
		}
		if !ok {
			return token{}, errTruncated()
		}
		if !isDigit(c) {
			return token{}, errInvalid()
		}
		for i++; i < len(body) && isDigit(body[i]); i++ {
		}
	}
	w.pos = i
	return token{kind: tokNumber, start: start, end: i}, nil
}

// scanString reads a string starting at the '"' at w.pos: no control
// character, only JSON's escapes.
func (w *replyWalk) scanString() (token, error) {
	body, start := w.body, w.pos
	escaped := false
	for i := start + 1; i < len(body); {
		c := body[i]
		switch {
		case c == '"':
			w.pos = i + 1
			return token{kind: tokString, start: start, end: i + 1, escaped: escaped}, nil
		case c < 0x20:
			return token{}, errInvalid()
		case c != '\\':
			i++
			continue
		}
		escaped = true
		i++
		if i >= len(body) {
			return token{}, errTruncated()
		}
		switch body[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			i++
			for k := 0; k < 4; k++ {
				if i >= len(body) {
					return token{}, errTruncated()
				}
				if !isHex(body[i]) {
					return token{}, errInvalid()
				}
				i++
			}
		default:
			return token{}, errInvalid()
		}
	}
	return token{}, errTruncated()
}

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// walk validates the whole body: one UTF-8 JSON object, nothing after it, no
// repeated or aliased key at any depth, no tool call, no refusal and no
// top-level error anywhere; and notes the fields DecodeReply reads. Its
// steps are the Decoder-based walk's, token for token.
func (w *replyWalk) walk() error {
	tok, err := w.next()
	if err != nil {
		return err
	}
	if tok.kind != tokObjectOpen {
		return replyErr(ClassMalformed, "the body is not a JSON object")
	}
	w.frames[0] = walkFrame{object: true, wantKey: true, role: roleTop}
	if w.mode == walkPlain {
		w.frames[0].role = roleOther
	}
	w.nFrames = 1
	for w.nFrames > 0 {
		tok, err := w.next()
		if err != nil {
			return err
		}
		top := &w.frames[w.nFrames-1]
		if top.object && top.wantKey {
			if tok.kind != tokKey { // the grammar allows only '}' here
				w.pop()
				continue
			}
			if err := w.key(top, tok); err != nil {
				return err
			}
			continue
		}
		switch tok.kind {
		case tokObjectOpen, tokArrayOpen:
			if w.nFrames >= maxReplyDepth {
				return replyErr(ClassMalformed, "the JSON is nested too deeply")
			}
			tok.start = w.pos - 1 // the '{' or '[' next just consumed
			role := w.note(top, tok)
			w.frames[w.nFrames] = walkFrame{
				object: tok.kind == tokObjectOpen, wantKey: tok.kind == tokObjectOpen,
				role: role, keysFrom: w.nKeys,
			}
			w.nFrames++
		case tokArrayClose: // ('}' is handled above)
			w.pop()
		default:
			w.note(top, tok)
			w.valueDone()
		}
	}
	for w.pos < len(w.body) && isSpace(w.body[w.pos]) {
		w.pos++
	}
	if w.pos < len(w.body) {
		return replyErr(ClassTrailingData, "")
	}
	return nil
}

// pop closes the innermost container; its parent object wants a key next.
func (w *replyWalk) pop() {
	f := &w.frames[w.nFrames-1]
	if f.object {
		w.nKeys = f.keysFrom
	}
	if f.role == roleToolCalls {
		w.fields.toolCalls.end = w.pos
	}
	w.nFrames--
	w.valueDone()
}

// valueDone marks the end of a value: its parent object wants a key next.
func (w *replyWalk) valueDone() {
	if n := w.nFrames; n > 0 && w.frames[n-1].object {
		w.frames[n-1].wantKey = true
	}
}

// note records a value that starts in the frame top if it is one of the
// fields kmx reads, and returns the role of the container it opens.
func (w *replyWalk) note(top *walkFrame, tok token) frameRole {
	v := value(tok)
	f := &w.fields
	switch top.role {
	case roleTop:
		switch top.field {
		case fieldModel:
			f.model = v
		case fieldChoices:
			f.choices = v
			if v.kind == tokArrayOpen {
				return roleChoices
			}
		case fieldUsage:
			f.usage = v
			if v.kind == tokObjectOpen {
				return roleUsage
			}
		}
	case roleUsage:
		switch top.field {
		case fieldPromptTokens:
			f.promptTokens = v
		case fieldCompletionTokens:
			f.completionTokens = v
		case fieldTotalTokens:
			f.totalTokens = v
		}
	case roleChoices:
		top.count++
		f.choiceCount = top.count
		if top.count == 1 {
			f.choice = v
			if v.kind == tokObjectOpen {
				return roleChoice
			}
		}
	case roleChoice:
		switch top.field {
		case fieldFinishReason:
			f.finishReason = v
		case fieldMessage:
			f.message = v
			if v.kind == tokObjectOpen {
				return roleMessage
			}
		}
	case roleMessage:
		switch top.field {
		case fieldRole:
			f.role = v
		case fieldContent:
			f.content = v
		case fieldToolCalls:
			f.toolCalls = v
			if v.kind == tokArrayOpen {
				return roleToolCalls
			}
		}
	}
	return roleOther
}

// key handles a key token in the object top: the duplicate check, then the
// keys whose value is judged at once (tool calls, refusal, a top-level
// error).
func (w *replyWalk) key(top *walkFrame, tok token) error {
	name := w.body[tok.start+1 : tok.end-1]
	if tok.escaped {
		name = unquote(w.body[tok.start:tok.end])
	}
	ascii := isASCII(name)
	if err := w.addKey(top, name, ascii); err != nil {
		return err
	}
	top.wantKey = false
	top.field = fieldOf(name)
	if w.mode == walkPlain {
		return nil
	}

	var tool, refusal, isError bool
	var buf [64]byte
	if ascii && len(name) <= len(buf) {
		norm := buf[:0]
		for _, c := range name {
			switch {
			case c == '_' || c == '-':
				continue
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			}
			norm = append(norm, c)
		}
		tool = bytes.Contains(norm, []byte("toolcall")) || bytes.Contains(norm, []byte("functioncall")) ||
			bytes.Contains(norm, []byte("tooluse"))
		refusal = string(norm) == "refusal"
		isError = string(norm) == "error"
	} else {
		norm := normKey(string(name))
		tool, refusal, isError = isToolKey(norm), norm == "refusal", norm == "error"
	}
	var err error
	switch {
	case tool && w.mode == walkToolReply && top.role == roleMessage && top.field == fieldToolCalls:
		// The one place a tool call may be: walked on like any value.
		return nil
	case tool:
		err = w.noCall()
	case refusal:
		err = w.noString(ClassRefusal)
	case isError && w.nFrames == 1:
		// A 200 that also reports an error (some gateways do, with or
		// without an answer beside it) is not a clean answer.
		err = w.noString(ClassErrorObject)
	default:
		return nil
	}
	if err != nil {
		return err
	}
	top.wantKey = true
	top.field = fieldOther
	return nil
}

// addKey refuses a key that repeats one of top's keys exactly or as a
// case-insensitive alias (encoding/json's field matching), and remembers it.
func (w *replyWalk) addKey(top *walkFrame, name []byte, ascii bool) error {
	if top.folded == nil && w.nKeys-top.keysFrom >= foldSetAfter {
		top.folded = make(map[string]struct{}, 2*(w.nKeys-top.keysFrom))
		for i := top.keysFrom; i < w.nKeys; i++ {
			top.folded[foldKey(string(w.keyAt(i).name))] = struct{}{}
		}
	}
	if top.folded != nil {
		// From here on this object's keys live in the set only.
		folded := foldKey(string(name))
		if _, dup := top.folded[folded]; dup {
			return replyErr(ClassDuplicateKey, "")
		}
		top.folded[folded] = struct{}{}
		return nil
	}
	for i := top.keysFrom; i < w.nKeys; i++ {
		k := w.keyAt(i)
		if sameFold(k.name, k.ascii, name, ascii) {
			return replyErr(ClassDuplicateKey, "")
		}
	}
	w.pushKey(walkKey{name: name, ascii: ascii})
	return nil
}

// noCall reads the value of a tool-call key. null and [] mean "no call"
// (several servers always send "tool_calls": []); anything else is a call.
func (w *replyWalk) noCall() error {
	tok, err := w.next()
	if err != nil {
		return err
	}
	if tok.kind == tokNull {
		return nil
	}
	if tok.kind == tokArrayOpen {
		next, err := w.next()
		if err != nil {
			return err
		}
		if next.kind == tokArrayClose {
			return nil
		}
	}
	return replyErr(ClassToolCall, "")
}

// noString reads the value of a refusal or top-level error key: only null
// or "" mean none; anything else is refused with class.
func (w *replyWalk) noString(class ReplyClass) error {
	tok, err := w.next()
	if err != nil {
		return err
	}
	if tok.kind == tokNull || (tok.kind == tokString && tok.end-tok.start == 2) {
		return nil
	}
	return replyErr(class, "")
}

// fieldOf names a decoded key kmx reads, by its exact name.
func fieldOf(name []byte) fieldID {
	switch string(name) {
	case "model":
		return fieldModel
	case "choices":
		return fieldChoices
	case "finish_reason":
		return fieldFinishReason
	case "message":
		return fieldMessage
	case "role":
		return fieldRole
	case "content":
		return fieldContent
	case "tool_calls":
		return fieldToolCalls
	case "usage":
		return fieldUsage
	case "prompt_tokens":
		return fieldPromptTokens
	case "completion_tokens":
		return fieldCompletionTokens
	case "total_tokens":
		return fieldTotalTokens
	}
	return fieldOther
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// sameFold reports whether foldKey(a) == foldKey(b), without building either.
func sameFold(a []byte, aASCII bool, b []byte, bASCII bool) bool {
	if aASCII && bASCII {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if upperASCII(a[i]) != upperASCII(b[i]) {
				return false
			}
		}
		return true
	}
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if foldRune(ra) != foldRune(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) == 0 && len(b) == 0
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// foldRune is foldKey for one rune.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		return rune(upperASCII(byte(r)))
	}
	return smallestFold(r)
}

// unquote decodes a JSON string the scanner accepted (quotes included)
// exactly as encoding/json does: a valid surrogate pair is one rune, a lone
// surrogate is U+FFFD.
func unquote(raw []byte) []byte {
	s := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(s))
	for r := 0; r < len(s); {
		c := s[r]
		if c != '\\' {
			out = append(out, c)
			r++
			continue
		}
		r++
		switch e := s[r]; e {
		case 'b':
			out = append(out, '\b')
			r++
		case 'f':
			out = append(out, '\f')
			r++
		case 'n':
			out = append(out, '\n')
			r++
		case 'r':
			out = append(out, '\r')
			r++
		case 't':
			out = append(out, '\t')
			r++
		case 'u':
			rr := getu4(s[r-1:])
			r += 5
			if utf16.IsSurrogate(rr) {
				if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
					out = utf8.AppendRune(out, dec)
					r += 6
					continue
				}
				rr = unicode.ReplacementChar
			}
			out = utf8.AppendRune(out, rr)
		default: // '"', '\\', '/'
			out = append(out, e)
			r++
		}
	}
	return out
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// normKey lower-cases a key and drops '_' and '-', so tool_calls, toolCalls,
// Tool-Calls and TOOL_CALLS all read "toolcalls".
func normKey(key string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, key)
}

// isToolKey reports a normalised key that names a tool or function call in
// any API's spelling (tool_calls, tool_call, function_call, tool_use, ...).
func isToolKey(norm string) bool {
	return strings.Contains(norm, "toolcall") ||
		strings.Contains(norm, "functioncall") ||
		strings.Contains(norm, "tooluse")
}

// foldKey maps a key to one representative of its case-insensitive class,
// exactly as encoding/json matches field names (bytes.EqualFold): ASCII
// upper-cased, other runes to the smallest rune of their Unicode simple-fold
// orbit (so "K", "k" and the Kelvin sign are one key).
func foldKey(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for _, r := range key {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

func smallestFold(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
