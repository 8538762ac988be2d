package route

// The strict reply decoder as it was before the single-pass scanner: a
// token walk on encoding/json's Decoder, then json.Unmarshal of the fields
// it needs. It is kept here, unchanged but for its names, as the reference
// FuzzDecodeReplyMatchesReference and TestDecodeReplyMatchesReference hold
// DecodeReply to: the same completion and the same error text on every body.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// refMaxReplyDepth bounds object/array nesting in a reply. A Chat Completions
// reply is four levels deep; anything far deeper is not one.
const refMaxReplyDepth = 64

// refDecodeReply strictly decodes a non-streaming Chat Completions reply body
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
func refDecodeReply(body []byte, wantModel string) (Completion, error) {
	if err := refWalkReply(body); err != nil {
		return Completion{}, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return Completion{}, replyErr(ClassMalformed, "")
	}

	model, ok := refJsonString(top["model"])
	if !ok || model == "" || model != wantModel {
		return Completion{}, replyErr(ClassModel, "")
	}

	var choices []json.RawMessage
	if err := json.Unmarshal(top["choices"], &choices); err != nil || len(choices) != 1 {
		return Completion{}, replyErr(ClassChoices, "")
	}
	var choice map[string]json.RawMessage
	if err := json.Unmarshal(choices[0], &choice); err != nil || choice == nil {
		return Completion{}, replyErr(ClassChoices, "the choice is not an object")
	}

	finish, ok := refJsonString(choice["finish_reason"])
	switch {
	case !ok:
		// Strict: a reply that does not say it stopped on its own may have
		// been cut off, so a missing or null finish_reason is refused too.
		return Completion{}, replyErr(ClassFinishReason, "")
	case finish == "stop":
	case finish == "length":
		return Completion{}, replyErr(ClassTruncated, "")
	case finish == "content_filter":
		return Completion{}, replyErr(ClassContentFilter, "")
	case finish == "tool_calls" || finish == "function_call":
		return Completion{}, replyErr(ClassToolCall, "")
	default:
		return Completion{}, replyErr(ClassFinishReason, "")
	}

	var message map[string]json.RawMessage
	if err := json.Unmarshal(choice["message"], &message); err != nil || message == nil {
		return Completion{}, replyErr(ClassContent, "the choice has no message object")
	}
	if rawRole, present := message["role"]; present {
		if role, ok := refJsonString(rawRole); !ok || role != "assistant" {
			return Completion{}, replyErr(ClassContent, `the message role is not "assistant"`)
		}
	}
	content, ok := refJsonString(message["content"])
	if !ok || strings.TrimSpace(content) == "" {
		return Completion{}, replyErr(ClassContent, "")
	}
	return Completion{Model: model, Text: content, FinishReason: finish, Usage: refUsage(top["usage"])}, nil
}

// refUsage reads a reply's usage: an object whose three counts are all
// whole numbers of 1 to 15 digits; anything else reports none.
func refUsage(raw json.RawMessage) *Usage {
	var obj map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	var u Usage
	for key, dst := range map[string]*int{"prompt_tokens": &u.PromptTokens, "completion_tokens": &u.CompletionTokens, "total_tokens": &u.TotalTokens} {
		n := string(obj[key])
		if len(n) == 0 || len(n) > 15 || (len(n) > 1 && n[0] == '0') || strings.Trim(n, "0123456789") != "" {
			return nil
		}
		v, err := strconv.Atoi(n)
		if err != nil {
			return nil
		}
		*dst = v
	}
	return &u
}

// refJsonString decodes raw as a JSON string. Absent, null and any other type
// report false.
func refJsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// refFrame is one open container during the walk.
type refFrame struct {
	object  bool
	wantKey bool                // in an object: the next token is a key or '}'
	keys    map[string]struct{} // folded keys seen in this object
	// path is where the container is: "k:" and an object key, or "i:N"
	// for the N-th element of an array (so no key can pose as an index).
	path []string
	key  string // in an object: the key whose value comes next
	n    int    // in an array: the elements seen so far
}

// refWalkReply validates the whole body on encoding/json's token stream: one
// UTF-8 JSON object, nothing after it, no repeated or aliased key at any
// depth, no tool call and no refusal anywhere.
func refWalkReply(body []byte) error { return refWalk(body, refModeReply) }

// Reference walk modes: the tool-free reply, a reply on the tool path
// (message.tool_calls of the first choice allowed), and a plain object
// (a tool call's arguments: grammar, depth and repeated keys only).
const (
	refModeReply = iota
	refModeTools
	refModePlain
)

// refChild is the path of a container opened in top.
func refChild(top *refFrame) []string {
	step := "k:" + top.key
	if !top.object {
		step = fmt.Sprintf("i:%d", top.n)
	}
	return append(append([]string(nil), top.path...), step)
}

func refWalk(body []byte, mode int) error {
	if !utf8.Valid(body) {
		return replyErr(ClassMalformed, "the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return refTokenErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return replyErr(ClassMalformed, "the body is not a JSON object")
	}
	stack := []*refFrame{{object: true, wantKey: true, keys: map[string]struct{}{}}}
	// valueDone marks the end of a value: its parent object wants a key
	// next, or its parent array has one more element.
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].n++
			}
		}
	}
	for len(stack) > 0 {
		tok, err := dec.Token()
		if err != nil {
			return refTokenErr(err)
		}
		top := stack[len(stack)-1]
		if top.object && top.wantKey {
			key, isKey := tok.(string)
			if !isKey { // the decoder allows only '}' here
				stack = stack[:len(stack)-1]
				valueDone()
				continue
			}
			folded := refFoldKey(key)
			if _, dup := top.keys[folded]; dup {
				return replyErr(ClassDuplicateKey, "")
			}
			top.keys[folded] = struct{}{}
			top.wantKey = false
			top.key = key
			if mode == refModePlain {
				continue
			}
			switch norm := refNormKey(key); {
			case mode == refModeTools && key == "tool_calls" && len(top.path) == 3 && top.path[0] == "k:choices" && top.path[1] == "i:0" && top.path[2] == "k:message":
				// The one place a tool call may be: walked like any value.
			case refIsToolKey(norm):
				if err := refNoCall(dec); err != nil {
					return err
				}
				top.wantKey = true
			case norm == "refusal":
				if err := refNoRefusal(dec); err != nil {
					return err
				}
				top.wantKey = true
			case norm == "error" && len(stack) == 1:
				// A 200 that also reports an error (some gateways do, with
				// or without an answer beside it) is not a clean answer.
				if err := refNoErrorObject(dec); err != nil {
					return err
				}
				top.wantKey = true
			}
			continue
		}
		d, isDelim := tok.(json.Delim)
		if !isDelim {
			valueDone()
			continue
		}
		switch d {
		case '{', '[':
			if len(stack) >= refMaxReplyDepth {
				return replyErr(ClassMalformed, "the JSON is nested too deeply")
			}
			stack = append(stack, &refFrame{object: d == '{', wantKey: d == '{', keys: map[string]struct{}{}, path: refChild(top)})
		default: // ']' (and '}' is handled above)
			stack = stack[:len(stack)-1]
			valueDone()
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return replyErr(ClassTrailingData, "")
	}
	return nil
}

// refTokenErr classifies a decoder error without quoting it: encoding/json's
// syntax errors repeat the offending character from the body.
func refTokenErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return replyErr(ClassMalformed, "the body ends before its JSON is complete (truncated)")
	}
	return replyErr(ClassMalformed, "the body is not valid JSON")
}

// refNoCall reads the value of a tool-call key. null and [] mean "no call"
// (several servers always send "tool_calls": []); anything else is a call.
func refNoCall(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return refTokenErr(err)
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); ok && d == '[' {
		next, err := dec.Token()
		if err != nil {
			return refTokenErr(err)
		}
		if d2, ok := next.(json.Delim); ok && d2 == ']' {
			return nil
		}
	}
	return replyErr(ClassToolCall, "")
}

// refNoRefusal reads the value of a refusal key: only null or "" mean none.
func refNoRefusal(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return refTokenErr(err)
	}
	if s, ok := tok.(string); tok == nil || (ok && s == "") {
		return nil
	}
	return replyErr(ClassRefusal, "")
}

// refNoErrorObject reads the value of a top-level error key: only null or ""
// mean none.
func refNoErrorObject(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return refTokenErr(err)
	}
	if s, ok := tok.(string); tok == nil || (ok && s == "") {
		return nil
	}
	return replyErr(ClassErrorObject, "")
}

// refNormKey lower-cases a key and drops '_' and '-', so tool_calls, toolCalls,
// Tool-Calls and TOOL_CALLS all read "toolcalls".
func refNormKey(key string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, key)
}

// refIsToolKey reports a normalised key that names a tool or function call in
// any API's spelling (tool_calls, tool_call, function_call, tool_use, ...).
func refIsToolKey(norm string) bool {
	return strings.Contains(norm, "toolcall") ||
		strings.Contains(norm, "functioncall") ||
		strings.Contains(norm, "tooluse")
}

// refFoldKey maps a key to one representative of its case-insensitive class,
// exactly as encoding/json matches field names (bytes.EqualFold): ASCII
// upper-cased, other runes to the smallest rune of their Unicode simple-fold
// orbit (so "K", "k" and the Kelvin sign are one key).
func refFoldKey(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for _, r := range key {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			continue
		}
		b.WriteRune(refSmallestFold(r))
	}
	return b.String()
}

func refSmallestFold(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// refDecodeToolReply is the reference of DecodeToolReply, on the
// Decoder-based walk and json.Unmarshal of the fields it reads.
func refDecodeToolReply(body []byte, wantModel string, offered []ToolDef, after bool) (Completion, error) {
	if err := refWalk(body, refModeTools); err != nil {
		return Completion{}, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return Completion{}, replyErr(ClassMalformed, "")
	}
	model, ok := refJsonString(top["model"])
	if !ok || model == "" || model != wantModel {
		return Completion{}, replyErr(ClassModel, "")
	}
	var choices []json.RawMessage
	if err := json.Unmarshal(top["choices"], &choices); err != nil || len(choices) != 1 {
		return Completion{}, replyErr(ClassChoices, "")
	}
	var choice map[string]json.RawMessage
	if err := json.Unmarshal(choices[0], &choice); err != nil || choice == nil {
		return Completion{}, replyErr(ClassChoices, "the choice is not an object")
	}
	finish, ok := refJsonString(choice["finish_reason"])
	switch {
	case !ok:
		return Completion{}, replyErr(ClassFinishReason, "")
	case finish == "stop" || finish == "tool_calls":
	case finish == "length":
		return Completion{}, replyErr(ClassTruncated, "")
	case finish == "content_filter":
		return Completion{}, replyErr(ClassContentFilter, "")
	case finish == "function_call":
		return Completion{}, replyErr(ClassToolCall, "the legacy function-call form is not run; tools are offered as tool calls")
	default:
		return Completion{}, replyErr(ClassFinishReason, "")
	}
	var message map[string]json.RawMessage
	if err := json.Unmarshal(choice["message"], &message); err != nil || message == nil {
		return Completion{}, replyErr(ClassContent, "the choice has no message object")
	}
	if rawRole, present := message["role"]; present {
		if role, ok := refJsonString(rawRole); !ok || role != "assistant" {
			return Completion{}, replyErr(ClassContent, `the message role is not "assistant"`)
		}
	}
	var calls []json.RawMessage
	if rawCalls, present := message["tool_calls"]; present && string(rawCalls) != "null" {
		if len(rawCalls) == 0 || rawCalls[0] != '[' || json.Unmarshal(rawCalls, &calls) != nil {
			return Completion{}, replyErr(ClassToolBatch, "the message's tool calls are not a list")
		}
	}
	called := len(calls) > 0 || finish == "tool_calls"
	if called && after {
		return Completion{}, replyErr(ClassToolRound, "")
	}
	content, isString := refJsonString(message["content"])
	if !called {
		if !isString || strings.TrimSpace(content) == "" {
			return Completion{}, replyErr(ClassContent, "")
		}
		return Completion{Model: model, Text: content, FinishReason: "stop", Usage: refUsage(top["usage"])}, nil
	}
	switch {
	case len(calls) == 0:
		return Completion{}, replyErr(ClassToolBatch, "the finish reason says tool calls but the message has none")
	case finish != "tool_calls":
		return Completion{}, replyErr(ClassFinishReason, "the message has tool calls but the finish reason does not say so")
	case len(calls) > 5:
		return Completion{}, replyErr(ClassToolBatch, fmt.Sprintf("the reply requests %d tool calls; at most 5 are allowed in one batch", len(calls)))
	}
	if rawContent, present := message["content"]; present && !isString && string(rawContent) != "null" {
		return Completion{}, replyErr(ClassContent, "")
	}
	out := Completion{Model: model, Text: content, FinishReason: "tool_calls", Usage: refUsage(top["usage"])}
	ids := map[string]bool{}
	for i, raw := range calls {
		n := i + 1
		var call, fn map[string]json.RawMessage
		if json.Unmarshal(raw, &call) != nil || call == nil {
			return Completion{}, replyErr(ClassToolBatch, fmt.Sprintf("tool call %d is not an object", n))
		}
		id, ok := refJsonString(call["id"])
		if !ok || id == "" {
			return Completion{}, replyErr(ClassToolBatch, fmt.Sprintf("tool call %d has no call ID", n))
		}
		if typ, ok := refJsonString(call["type"]); !ok || typ != "function" {
			return Completion{}, replyErr(ClassToolBatch, fmt.Sprintf(`tool call %d's type is not "function"`, n))
		}
		if json.Unmarshal(call["function"], &fn) != nil || fn == nil {
			return Completion{}, replyErr(ClassToolBatch, fmt.Sprintf("tool call %d has no function object", n))
		}
		name, ok := refJsonString(fn["name"])
		if !ok {
			return Completion{}, replyErr(ClassToolBatch, fmt.Sprintf("tool call %d has no function name", n))
		}
		known := false
		for _, d := range offered {
			known = known || d.Name == name
		}
		if !known {
			return Completion{}, replyErr(ClassToolName, fmt.Sprintf("tool call %d", n))
		}
		args, ok := refJsonString(fn["arguments"])
		if !ok {
			return Completion{}, replyErr(ClassToolArguments, fmt.Sprintf("tool call %d's arguments are not a string", n))
		}
		if err := refWalk([]byte(args), refModePlain); err != nil {
			what := "are not one JSON object"
			var re *ReplyError
			if errors.As(err, &re) && re.Class == ClassDuplicateKey {
				what = "repeat a key in one object (exactly or as a case-insensitive alias)"
			}
			return Completion{}, replyErr(ClassToolArguments, fmt.Sprintf("tool call %d's arguments %s", n, what))
		}
		if ids[id] {
			return Completion{}, replyErr(ClassToolBatch, fmt.Sprintf("tool call %d repeats a call ID of the same batch", n))
		}
		ids[id] = true
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: name, Arguments: args})
	}
	return out, nil
}
