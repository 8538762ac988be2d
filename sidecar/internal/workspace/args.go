package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// args is one call's arguments, decoded strictly: a JSON object whose keys
// are all known to the tool. A problem is a tool error the model sees.
type args struct {
	tool string
	m    map[string]json.RawMessage
}

func decodeArgs(tool, text string, known ...string) (args, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
		return args{}, toolErr("the arguments of %s are not one JSON object", tool)
	}
	allowed := map[string]bool{}
	for _, k := range known {
		allowed[k] = true
	}
	var unknown []string
	for k := range m {
		if !allowed[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return args{}, toolErr("%s does not take %q; it takes %s", tool, unknown[0], strings.Join(known, ", "))
	}
	return args{tool: tool, m: m}, nil
}

func (a args) has(k string) bool {
	v, ok := a.m[k]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

func (a args) str(k string, required bool) (string, error) {
	if !a.has(k) {
		if required {
			return "", toolErr("%s needs %q (a string)", a.tool, k)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(a.m[k], &s); err != nil {
		return "", toolErr("%s: %q must be a string", a.tool, k)
	}
	return s, nil
}

func (a args) boolean(k string, required bool) (bool, error) {
	if !a.has(k) {
		if required {
			return false, toolErr("%s needs %q (true or false)", a.tool, k)
		}
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(a.m[k], &b); err != nil {
		return false, toolErr("%s: %q must be true or false", a.tool, k)
	}
	return b, nil
}

// integer reads a whole number (JSON numbers such as 3 or 3.0); ok is false
// when the key is absent.
func (a args) integer(k string) (n int, ok bool, err error) {
	if !a.has(k) {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(a.m[k], &f); err != nil || f != float64(int(f)) || f < -1e9 || f > 1e9 {
		return 0, false, toolErr("%s: %q must be a whole number", a.tool, k)
	}
	return int(f), true, nil
}

func (a args) strings(k string) ([]string, error) {
	if !a.has(k) {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal(a.m[k], &out); err != nil {
		return nil, toolErr("%s: %q must be a list of strings", a.tool, k)
	}
	return out, nil
}

// toolError is a problem the model sees as the call's result.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErr(format string, a ...any) error { return &toolError{msg: fmt.Sprintf(format, a...)} }
