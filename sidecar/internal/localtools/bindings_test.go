package localtools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodBinding = `{
  "schemaVersion": "kmx.local-tools/v1",
  "bindings": [{"name": "github_list_merged_prs", "endpointRef": "github-mcp", "repository": "octo-org/Hello.World"}],
  "endpoints": {"github-mcp": {
    "url": "https://api.githubcopilot.com/mcp/readonly",
    "credentialEnv": "GITHUB_MCP_TOKEN"
  }}
}
`

// fakeToken is credential-shaped, built at run time so the repository
// holds no credential shape.
func fakeToken() string { return "gh" + "p_" + strings.Repeat("Ab1", 12) }

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadBindingAcceptsTheDocumentedFile(t *testing.T) {
	p := writeFile(t, t.TempDir(), "tools.json", goodBinding)
	b, err := ReadBinding(p)
	if err != nil {
		t.Fatalf("ReadBinding: %v", err)
	}
	want := Binding{Path: p, Name: GitHubTool, Repository: "octo-org/Hello.World", URL: GitHubMCPURL, CredentialEnv: "GITHUB_MCP_TOKEN"}
	if *b != want {
		t.Fatalf("got %+v, want %+v", *b, want)
	}
}

func TestReadBindingRefusesMalformedFiles(t *testing.T) {
	swap := func(old, new string) string {
		if !strings.Contains(goodBinding, old) {
			t.Fatalf("test setup: %q not in the good binding", old)
		}
		return strings.Replace(goodBinding, old, new, 1)
	}
	tests := []struct{ name, body, want string }{
		{"not JSON", "{", "is not the kmx.local-tools/v1 JSON"},
		{"empty", "", "is not the kmx.local-tools/v1 JSON"},
		{"array", "[]", "is not the kmx.local-tools/v1 JSON"},
		{"trailing data", goodBinding + "{}", "data after the JSON object"},
		{"unknown top key", swap(`"schemaVersion"`, `"extra": 1, "schemaVersion"`), `unknown field "extra"`},
		{"unknown binding key", swap(`"repository"`, `"headers": {}, "repository"`), `unknown field "headers"`},
		{"unknown endpoint key", swap(`"credentialEnv"`, `"token": "x", "credentialEnv"`), `unknown field "token"`},
		{"repeated top key", swap(`"schemaVersion": "kmx.local-tools/v1",`, `"schemaVersion": "kmx.local-tools/v1", "schemaVersion": "kmx.local-tools/v1",`), `"schemaVersion" twice`},
		{"repeated nested key", swap(`"credentialEnv": "GITHUB_MCP_TOKEN"`, `"credentialEnv": "A", "credentialEnv": "GITHUB_MCP_TOKEN"`), `"credentialEnv" twice`},
		{"repeated endpoint name", swap(`"github-mcp": {`, `"github-mcp": {}, "github-mcp": {`), `"github-mcp" twice`},
		{"no schemaVersion", swap(`"schemaVersion": "kmx.local-tools/v1",`, ``), `no "schemaVersion"`},
		{"other schemaVersion", swap(`kmx.local-tools/v1`, `kmx.local-tools/v2`), `only "kmx.local-tools/v1"`},
		{"no bindings", swap(`"bindings": [{"name": "github_list_merged_prs", "endpointRef": "github-mcp", "repository": "octo-org/Hello.World"}],`, ``), `no "bindings"`},
		{"zero bindings", swap(`[{"name": "github_list_merged_prs", "endpointRef": "github-mcp", "repository": "octo-org/Hello.World"}]`, `[]`), "has 0 bindings"},
		{"two bindings", swap(`"repository": "octo-org/Hello.World"}]`, `"repository": "octo-org/Hello.World"}, {"name": "github_list_merged_prs", "endpointRef": "github-mcp", "repository": "a/b"}]`), "has 2 bindings"},
		{"other tool", swap(`"name": "github_list_merged_prs"`, `"name": "shell"`), `binds the tool "shell"`},
		{"missing name", swap(`"name": "github_list_merged_prs", `, ``), `needs "name"`},
		{"null repository", swap(`"octo-org/Hello.World"`, `null`), `needs "name", "endpointRef" and "repository"`},
		{"repository not owner/repo", swap(`octo-org/Hello.World`, `Hello.World`), "is not OWNER/REPO"},
		{"repository with three parts", swap(`octo-org/Hello.World`, `a/b/c`), "is not OWNER/REPO"},
		{"repository dot-dot", swap(`octo-org/Hello.World`, `octo-org/..`), "is not OWNER/REPO"},
		{"repository URL", swap(`octo-org/Hello.World`, `https://github.com/octo-org/Hello.World`), "is not OWNER/REPO"},
		{"undefined endpointRef", swap(`"endpointRef": "github-mcp"`, `"endpointRef": "other"`), `"other", which "endpoints" does not define`},
		{"no endpoints", swap(`"endpoints": {"github-mcp": {
    "url": "https://api.githubcopilot.com/mcp/readonly",
    "credentialEnv": "GITHUB_MCP_TOKEN"
  }}`, `"x": 1`), `unknown field "x"`},
		{"two endpoints", swap(`"endpoints": {`, `"endpoints": {"spare": {"url": "https://api.githubcopilot.com/mcp/readonly", "credentialEnv": "B"}, `), "has 2 endpoints"},
		{"null endpoint", swap(`"github-mcp": {
    "url": "https://api.githubcopilot.com/mcp/readonly",
    "credentialEnv": "GITHUB_MCP_TOKEN"
  }`, `"github-mcp": null`), `needs "url" and "credentialEnv"`},
		{"other url", swap(`/mcp/readonly`, `/mcp/`), "not the one supported endpoint"},
		{"http url", swap(`https://api`, `http://api`), "not the one supported endpoint"},
		{"url trailing slash", swap(`/mcp/readonly"`, `/mcp/readonly/"`), "not the one supported endpoint"},
		{"url other host", swap(`api.githubcopilot.com`, `127.0.0.1`), "not the one supported endpoint"},
		{"url upper case", swap(`api.githubcopilot.com`, `API.githubcopilot.com`), "not the one supported endpoint"},
		{"credentialEnv not a name", swap(`"GITHUB_MCP_TOKEN"`, `"$GITHUB_MCP_TOKEN"`), "not an environment variable name"},
		{"credentialEnv empty", swap(`"GITHUB_MCP_TOKEN"`, `""`), "not an environment variable name"},
		{"credentialEnv list", swap(`"GITHUB_MCP_TOKEN"`, `["A", "B"]`), "is not the kmx.local-tools/v1 JSON"},
		{"credential value as credentialEnv", swap(`GITHUB_MCP_TOKEN`, fakeToken()), "credential-shaped text (GitHub token)"},
		{"credential value anywhere", swap(`octo-org/Hello.World`, "octo-org/"+fakeToken()), "credential-shaped text"},
		{"bearer header", swap(`"GITHUB_MCP_TOKEN"`, `"GITHUB_MCP_TOKEN", "authorization": "Bear`+`er abcdefghijklmnopqrstuvwxyz0123456789"`), "credential-shaped text"},
		{"over 16 KiB", goodBinding + strings.Repeat(" ", MaxBindingsBytes), "at most 16 KiB"},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "b"+string(rune('a'+i%26))+strings.Repeat("x", i/26)+".json", tc.body)
			_, err := ReadBinding(p)
			var be *BindingError
			if !errors.As(err, &be) {
				t.Fatalf("ReadBinding = %v, want a BindingError containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			if be.NextStep() == "" {
				t.Fatal("the refusal says nothing about what to change")
			}
			if strings.Contains(err.Error(), fakeToken()) {
				t.Fatal("the refusal quotes the credential")
			}
		})
	}
}

func TestReadBindingRefusesUnsafePaths(t *testing.T) {
	dir := t.TempDir()
	real := writeFile(t, dir, "tools.json", goodBinding)
	if err := os.Symlink(real, filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub"), "tools.json", goodBinding)
	if err := os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "sublink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path, want string }{
		{"empty", "", "path is empty"},
		{"NUL", "tools\x00.json", "NUL byte"},
		{"dot slash", "./tools.json", "not clean"},
		{"double slash", dir + "//tools.json", "not clean"},
		{"trailing slash", dir + "/tools.json/", "not clean"},
		{"parent traversal", dir + "/sub/../tools.json", "parent folder (..)"},
		{"relative parent", "../tools.json", "parent folder (..)"},
		{"symlink file", dir + "/link.json", "symbolic link"},
		{"symlink folder", dir + "/sublink/tools.json", "symbolic link"},
		{"missing", dir + "/nope.json", "does not exist"},
		{"folder", dir + "/folder.json", "not a regular file"},
		{"device", "/dev/null", "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadBinding(tc.path)
			var be *BindingError
			if !errors.As(err, &be) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadBinding(%q) = %v, want a BindingError containing %q", tc.path, err, tc.want)
			}
		})
	}
	if _, err := ReadBinding(dir + "/sub/tools.json"); err != nil {
		t.Fatalf("a real nested path was refused: %v", err)
	}
	t.Chdir(dir)
	if _, err := ReadBinding("tools.json"); err != nil {
		t.Fatalf("a clean relative path was refused: %v", err)
	}
	if _, err := ReadBinding("sub/tools.json"); err != nil {
		t.Fatalf("a clean relative nested path was refused: %v", err)
	}
}

func TestBindingCredential(t *testing.T) {
	b := &Binding{Path: "tools.json", Name: GitHubTool, Repository: "a/b", URL: GitHubMCPURL, CredentialEnv: "TOK"}
	tok := fakeToken()
	reads := 0
	env := func(v string) func(string) string {
		return func(name string) string {
			reads++
			if name != "TOK" {
				t.Errorf("read the variable %q; only TOK is named", name)
			}
			return v
		}
	}
	got, err := b.Credential(env(tok), map[string]string{"the agent file": "no secret here"})
	if err != nil || got != tok || reads != 1 {
		t.Fatalf("Credential returned a value: %v, err %v, after %d reads; want the value after one read", got != "", err, reads)
	}
	tests := []struct {
		name, value string
		texts       map[string]string
		want        string
	}{
		{"missing", "", nil, "TOK is not set or is empty"},
		{"spaces", " " + tok, nil, "surrounding spaces"},
		{"newline", tok + "\n", nil, "surrounding spaces"},
		{"in the agent file", tok, map[string]string{"the agent file": "say " + tok}, "the agent file contains the value of TOK"},
		{"escaped in the input", tok, map[string]string{"the input": `{"q":"\u0067` + tok[1:] + `"}`}, "the input contains the value of TOK"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.Credential(env(tc.value), tc.texts)
			var be *BindingError
			if !errors.As(err, &be) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Credential = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), tok) {
				t.Fatal("the refusal quotes the credential")
			}
		})
	}
}
