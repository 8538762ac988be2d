package mcpserver

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// The server reads only agent files inside its roots. A tool's file
// argument comes from a model, so without this a client could have kmx read
// any file on the machine (and return its hash as the revision).
//
// The roots are the folders given with kmx mcp --root (default: the working
// directory). A client that offers MCP roots narrows them: with --root, a
// file must be inside one of the server's roots and one of the client's;
// with the working-directory default, the client's roots take its place
// (the client knows its workspace; the directory it started kmx in is a
// guess).

// ResolveRoots turns the --root folders into absolute paths with every
// symlink resolved. Each must be an existing folder.
func ResolveRoots(dirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", d, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", d, problem.PathReason(err))
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", d, problem.PathReason(err))
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("root %s is not a folder", d)
		}
		out = append(out, real)
	}
	return out, nil
}

// workingDirRoot is the default root: the working directory, resolved. If
// it cannot be found, there is no root and every file is refused.
func workingDirRoot() []string {
	wd, err := os.Getwd()
	if err != nil {
		return nil
	}
	roots, err := ResolveRoots([]string{wd})
	if err != nil {
		return nil
	}
	return roots
}

// confine returns the resolved path of an agent file a tool (named as
// MCP names it: Test) names, or a refusal. It decides before reading the file, and its refusal for a path
// outside the roots is the same whether or not the path exists.
func (c Config) confine(ctx context.Context, ss *mcp.ServerSession, tool, file string) (string, *refusal) {
	if file == "" {
		return "", &refusal{msg: fmt.Sprintf("%s: name one agent file in the file argument", tool), next: "pass the absolute path of an *.agent.md file as file"}
	}
	roots := c.roots(ctx, ss)
	return confineTo(roots, tool, file, file)
}

// confineTo checks one path (path) a tool reads on behalf of the file it
// was given (named, which the refusal names) against roots.
func confineTo(roots []string, tool, named, path string) (string, *refusal) {
	outside := outsideRoots(roots, tool, named)
	if !isAgentName(path) {
		return "", outside
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", outside
	}
	real := resolveExisting(abs)
	if !isAgentName(real) || !within(real, roots) {
		return "", outside
	}
	return real, nil
}

// outsideRoots is the one refusal for any path a tool may not read: the
// same words whether or not it exists.
func outsideRoots(roots []string, tool, named string) *refusal {
	return &refusal{
		msg:  fmt.Sprintf("%s: %s is not an *.agent.md file inside this server's roots", tool, named),
		next: "pass an *.agent.md file (or the NAME.agent.examples.yaml beside it) under " + strings.Join(roots, " or ") + ", or add the folder that holds it to the server's roots (a root the client offers, or " + words(problem.Root, "FOLDER") + ")",
	}
}

// pairFile is a tool's file argument confined to the roots, for tools that
// take either file of an agent pair (Run, Test, Explain).
type pairFile struct {
	// agent is the agent file (as named: NAME.agent.md beside a named
	// examples file) and real where it resolves to.
	agent, real string
	// read reads the other file of the pair, confined to the same roots.
	read func(string) ([]byte, error)
}

// confinePair is confine for a tool that accepts either file of a pair. A
// NAME.agent.examples.yaml names the agent file beside it (where
// failures are kept, and what a run reads): both the named file and that
// agent file must be inside the roots, symlinks resolved, or the call is
// refused with the same words as any path outside them. The returned
// reader applies the same check to the sibling examples file before
// reading it, so a symlink beside an agent file cannot lead outside.
func (c Config) confinePair(ctx context.Context, ss *mcp.ServerSession, tool, file string) (pairFile, *refusal) {
	if file == "" {
		_, r := c.confine(ctx, ss, tool, file)
		return pairFile{}, r
	}
	roots := c.roots(ctx, ss)
	agent := file
	if a := agentfile.AgentPathOf(file); a != "" {
		// The examples file itself resolves inside the roots, as an
		// examples file; the agent file beside it is checked below.
		abs, err := filepath.Abs(file)
		if real := resolveExisting(abs); err != nil || !within(real, roots) || !agentfile.IsExamplesFile(real) {
			return pairFile{}, outsideRoots(roots, tool, file)
		}
		agent = a
	}
	real, r := confineTo(roots, tool, file, agent)
	if r != nil {
		return pairFile{}, r
	}
	read := func(p string) ([]byte, error) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		real := resolveExisting(abs)
		if !within(real, roots) {
			return nil, fmt.Errorf("%s leads outside this server's roots", filepath.Base(p))
		}
		return invocation.ReadPairFile(real)
	}
	return pairFile{agent: agent, real: real, read: read}, nil
}

func isAgentName(p string) bool { return strings.HasSuffix(filepath.Base(p), ".agent.md") }

// resolveExisting resolves the symlinks of the longest existing prefix of
// abs and appends the rest, so a file that does not exist (yet) is judged
// by where it would be.
func resolveExisting(abs string) string {
	rest := ""
	p := abs
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// within reports whether p is one of roots or below one.
func within(p string, roots []string) bool {
	for _, r := range roots {
		rel, err := filepath.Rel(r, p)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// roots returns the folders this call may read: the server's, narrowed or
// replaced by the client's roots when it offers any.
func (c Config) roots(ctx context.Context, ss *mcp.ServerSession) []string {
	client := clientRoots(ctx, ss)
	switch {
	case len(client) == 0:
		return c.Roots
	case !c.ExplicitRoots:
		return client
	}
	var both []string
	for _, cr := range client {
		for _, sr := range c.Roots {
			switch {
			case within(cr, []string{sr}):
				both = append(both, cr)
			case within(sr, []string{cr}):
				both = append(both, sr)
			}
		}
	}
	return both
}

// clientRoots asks the client for its roots when it says it has them. A
// client without roots, or one whose answer fails, offers none. From
// protocol 2026-07-28 on a server may not ask during a call (the SDK
// refuses), so there the server's roots alone decide.
func clientRoots(ctx context.Context, ss *mcp.ServerSession) []string {
	if ss == nil {
		return nil
	}
	p := ss.InitializeParams()
	// The SDK cannot tell "roots: {}" from no roots capability once decoded,
	// so a client is asked only when it says its roots can change (what the
	// editors that offer roots say).
	// Roots are deprecated from protocol 2026-07-28 on, but the clients
	// that offer them speak earlier versions, and honouring them is asked.
	//lint:ignore SA1019 see above
	if p == nil || p.Capabilities == nil || (p.Capabilities.RootsV2 == nil && !p.Capabilities.Roots.ListChanged) {
		return nil
	}
	//lint:ignore SA1019 see above
	res, err := ss.ListRoots(ctx, nil)
	if err != nil || res == nil {
		return nil
	}
	var out []string
	for _, r := range res.Roots {
		u, err := url.Parse(r.URI)
		if err != nil || u.Scheme != "file" {
			continue
		}
		p := filepath.FromSlash(u.Path)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if filepath.IsAbs(p) {
			out = append(out, p)
		}
	}
	return out
}
