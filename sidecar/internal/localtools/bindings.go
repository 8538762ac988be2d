package localtools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/secrets"
)

// The strict local binding file (kmx.local-tools/v1): one binding of the
// fixed GitHub read to one repository, through one fixed endpoint, with the
// credential named by an environment variable, never written in the file.
const (
	// BindingsSchema is the only schemaVersion accepted.
	BindingsSchema = "kmx.local-tools/v1"
	// MaxBindingsBytes bounds the binding file.
	MaxBindingsBytes = 16 << 10
	// GitHubTool is the only tool a binding file can bind.
	GitHubTool = "github_list_merged_prs"
	// GitHubMCPURL is the only endpoint a binding file can name: GitHub's
	// read-only MCP server.
	GitHubMCPURL = "https://api.githubcopilot.com/mcp/readonly"
)

// Binding is a read binding file: what the live read needs except the
// credential value, which is read from CredentialEnv once per invocation.
type Binding struct {
	// Path is the binding file as given.
	Path string
	// Name is the bound tool (always GitHubTool).
	Name string
	// Repository is OWNER/REPO in GitHub's canonical letter case.
	Repository string
	// URL is the endpoint (always GitHubMCPURL).
	URL string
	// CredentialEnv names the environment variable holding the credential.
	CredentialEnv string
}

// BindingError is a refusal of a binding file or its credential: what is
// wrong and what to change. It never quotes a credential value.
type BindingError struct {
	Path string
	Msg  string
	Hint string
	// Step, when set, is Hint in each front's words (Hint is the command
	// line's).
	Step problem.Sentence
}

func (e *BindingError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// NextStep says what to change (problem.Problem).
func (e *BindingError) NextStep() string { return e.Hint }

const bindingShape = `{"schemaVersion": "kmx.local-tools/v1", "bindings": [{"name": "github_list_merged_prs", "endpointRef": "github-mcp", "repository": "OWNER/REPO"}], "endpoints": {"github-mcp": {"url": "https://api.githubcopilot.com/mcp/readonly", "credentialEnv": "NAME"}}}`

// The patterns are compiled on first use: their counted repetitions expand
// into programs of about 290 KB, which every kmx process built at start
// (0.7 ms, and heap it kept for its whole life) though only a bindings file
// is checked against them.
var (
	repoPattern = lazyRegexp(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)
	envPattern  = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	refPattern  = lazyRegexp(`^[A-Za-z0-9._-]{1,64}$`)
)

func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}

type bindingsFile struct {
	SchemaVersion *string                   `json:"schemaVersion"`
	Bindings      []bindingEntry            `json:"bindings"`
	Endpoints     map[string]*endpointEntry `json:"endpoints"`
}

type bindingEntry struct {
	Name        *string `json:"name"`
	EndpointRef *string `json:"endpointRef"`
	Repository  *string `json:"repository"`
}

type endpointEntry struct {
	URL           *string `json:"url"`
	CredentialEnv *string `json:"credentialEnv"`
}

// ReadBinding reads and checks a kmx.local-tools/v1 binding file. The path
// must be clean (tools.json, not ./tools.json), with no ".." and no
// symbolic-link component, and name a regular file of at most 16 KiB whose
// identity is checked again after opening. The file must be exactly the
// documented schema: unknown or repeated keys, a second binding or
// endpoint, another tool, URL or repository form, and credential-shaped
// text anywhere in the file refuse. Nothing is read from the environment.
func ReadBinding(path string) (*Binding, error) {
	data, err := readBindingFile(path)
	if err != nil {
		return nil, err
	}
	b, msg := parseBinding(data)
	if msg != "" {
		return nil, &BindingError{Path: path, Msg: msg, Hint: "write the binding file exactly as " + bindingShape + " (see docs/tools.md)"}
	}
	b.Path = path
	return b, nil
}

func readBindingFile(path string) ([]byte, error) {
	pathErr := func(msg, hint string) error { return &BindingError{Path: path, Msg: msg, Hint: hint} }
	const cleanHint = "give a clean path to the binding file, for example tools.json or /home/me/kmx/tools.json"
	switch {
	case path == "":
		return nil, &BindingError{Msg: "the binding file path is empty", Hint: cleanHint}
	case strings.ContainsRune(path, 0):
		return nil, &BindingError{Msg: "the binding file path holds a NUL byte", Hint: cleanHint}
	}
	for _, part := range strings.Split(filepath.ToSlash(path), "/") {
		if part == ".." {
			return nil, pathErr("the path goes through a parent folder (..)", cleanHint+", without ..")
		}
	}
	if filepath.Clean(path) != path {
		return nil, pathErr(fmt.Sprintf("the path is not clean (it would be %s)", filepath.Clean(path)), cleanHint)
	}
	// Every component, from the first below the root, must not be a
	// symbolic link.
	prefix := ""
	if filepath.IsAbs(path) {
		prefix = filepath.VolumeName(path) + string(filepath.Separator)
	}
	rest := strings.TrimPrefix(path, prefix)
	parts := strings.Split(rest, string(filepath.Separator))
	var info os.FileInfo
	for i, part := range parts {
		prefix = filepath.Join(prefix, part)
		if i == 0 && !filepath.IsAbs(path) {
			prefix = part
		}
		fi, err := os.Lstat(prefix)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, pathErr("the binding file does not exist", "check the path given to --tool-bindings")
			}
			return nil, pathErr(fmt.Sprintf("cannot be read: %v", problem.PathReason(err)), "check the path and its permissions")
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, pathErr(fmt.Sprintf("%s is a symbolic link; kmx reads binding files only through real folders", prefix), "give the real path of the binding file")
		}
		info = fi
	}
	if !info.Mode().IsRegular() {
		return nil, pathErr("is not a regular file", "point --tool-bindings at a regular JSON file")
	}
	if info.Size() > MaxBindingsBytes {
		return nil, pathErr(fmt.Sprintf("is %d bytes; a binding file is at most 16 KiB", info.Size()), "write only the one binding and endpoint")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, pathErr(fmt.Sprintf("cannot be opened: %v", problem.PathReason(err)), "check the path and its permissions")
	}
	defer func() { _ = f.Close() }()
	opened, err := f.Stat()
	if err != nil {
		return nil, pathErr(fmt.Sprintf("cannot be read: %v", err), "check the file")
	}
	if !os.SameFile(info, opened) || !opened.Mode().IsRegular() {
		return nil, pathErr("changed while it was being opened", "run again once nothing is replacing the binding file")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxBindingsBytes+1))
	if err != nil {
		return nil, pathErr(fmt.Sprintf("cannot be read: %v", err), "check the file")
	}
	if len(data) > MaxBindingsBytes {
		return nil, pathErr("is larger than 16 KiB", "write only the one binding and endpoint")
	}
	return data, nil
}

// parseBinding checks the exact schema; a non-empty string is the problem.
func parseBinding(data []byte) (*Binding, string) {
	if f := secrets.Scan(string(data)); len(f) > 0 {
		return nil, fmt.Sprintf("holds credential-shaped text (%s); a binding file names the environment variable that holds the credential (credentialEnv), never the value", f[0].Shape)
	}
	if msg := checkDuplicateKeys(data); msg != "" {
		return nil, msg
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f bindingsFile
	if err := dec.Decode(&f); err != nil {
		return nil, "is not the kmx.local-tools/v1 JSON: " + strings.TrimPrefix(err.Error(), "json: ")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, "has data after the JSON object"
	}
	switch {
	case f.SchemaVersion == nil:
		return nil, `has no "schemaVersion"`
	case *f.SchemaVersion != BindingsSchema:
		return nil, fmt.Sprintf("has schemaVersion %q; only %q is supported", *f.SchemaVersion, BindingsSchema)
	case f.Bindings == nil:
		return nil, `has no "bindings" list`
	case len(f.Bindings) != 1:
		return nil, fmt.Sprintf(`has %d bindings; exactly one (%s) is supported`, len(f.Bindings), GitHubTool)
	case f.Endpoints == nil:
		return nil, `has no "endpoints" object`
	case len(f.Endpoints) != 1:
		return nil, fmt.Sprintf("has %d endpoints; exactly one is supported", len(f.Endpoints))
	}
	be := f.Bindings[0]
	switch {
	case be.Name == nil || be.EndpointRef == nil || be.Repository == nil:
		return nil, `the binding needs "name", "endpointRef" and "repository"`
	case *be.Name != GitHubTool:
		return nil, fmt.Sprintf("binds the tool %q; only %s can be bound", *be.Name, GitHubTool)
	case !refPattern().MatchString(*be.EndpointRef):
		return nil, `the binding's "endpointRef" is not a plain endpoint name`
	case !repoPattern().MatchString(*be.Repository) || strings.HasSuffix(*be.Repository, "/.") || strings.HasSuffix(*be.Repository, "/.."):
		return nil, fmt.Sprintf("the repository %q is not OWNER/REPO", *be.Repository)
	}
	ep, ok := f.Endpoints[*be.EndpointRef]
	switch {
	case !ok:
		return nil, fmt.Sprintf("the binding names the endpoint %q, which \"endpoints\" does not define", *be.EndpointRef)
	case ep == nil || ep.URL == nil || ep.CredentialEnv == nil:
		return nil, `the endpoint needs "url" and "credentialEnv"`
	case *ep.URL != GitHubMCPURL:
		return nil, fmt.Sprintf("the endpoint url %q is not the one supported endpoint %s", *ep.URL, GitHubMCPURL)
	case !envPattern().MatchString(*ep.CredentialEnv):
		return nil, `"credentialEnv" is not an environment variable name (letters, digits and _, not starting with a digit)`
	}
	return &Binding{Name: GitHubTool, Repository: *be.Repository, URL: *ep.URL, CredentialEnv: *ep.CredentialEnv}, ""
}

// checkDuplicateKeys walks the JSON tokens and reports the first object key
// given twice at any depth (encoding/json keeps the last silently).
func checkDuplicateKeys(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			return "" // the strict decode reports syntax errors
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, isKey := tok.(string); isKey && top != nil && top.object && top.key {
			if top.keys[k] {
				return fmt.Sprintf("has the key %q twice in one object; keep one", k)
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

// Credential reads the binding's variable once and checks it: missing or
// empty refuses, and so does a value that appears in any of texts (the
// agent file and the input: a credential must never be sent or journaled).
// The value is returned for the live read only; it is never written.
func (b *Binding) Credential(getenv func(string) string, texts map[string]string) (string, error) {
	v := ""
	if getenv != nil {
		v = getenv(b.CredentialEnv)
	}
	if v == "" {
		step := func(w problem.Words) string {
			return fmt.Sprintf("export %s with a GitHub token that can read %s, or run without %s", b.CredentialEnv, b.Repository, w(problem.ToolBindings, ""))
		}
		return "", &BindingError{Path: b.Path, Msg: fmt.Sprintf("the credential variable %s is not set or is empty", b.CredentialEnv),
			Hint: step(problem.Flags), Step: step}
	}
	if strings.TrimSpace(v) != v || strings.ContainsAny(v, "\r\n\x00") {
		return "", &BindingError{Path: b.Path, Msg: fmt.Sprintf("the credential in %s has surrounding spaces or control characters", b.CredentialEnv),
			Hint: fmt.Sprintf("set %s to the token alone", b.CredentialEnv)}
	}
	for what, text := range texts {
		if secrets.ContainsValue(text, v) {
			return "", &BindingError{Path: b.Path, Msg: fmt.Sprintf("%s contains the value of %s; kmx never sends or journals a credential", what, b.CredentialEnv),
				Hint: "remove the credential from the agent file or input, and rotate it"}
		}
	}
	return v, nil
}
