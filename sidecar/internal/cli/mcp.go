package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kmxdev/kmx/sidecar/internal/mcpserver"
	"github.com/kmxdev/kmx/sidecar/internal/route"
)

const mcpUsage = "kmx mcp [--root DIR]... [--endpoint URL] [--key-env NAME] [--judge-endpoint URL] [--judge-key-env NAME] [--concurrency N] [--tool-bindings PATH] [--log-level LEVEL]"

// runMCP serves the MCP tools Run, Test, Explain and Chat on stdin/stdout until
// the client closes stdin. The tools read only *.agent.md files under the
// --root folders (default: the working directory). Stdout carries only the protocol; the log goes
// to stderr. The route settings are fixed here, at startup: no tool
// argument can change an endpoint or a credential variable.
func runMCP(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("mcp")
	var rf routeFlags
	var roots stringList
	fs.Var(&roots, "root", "`DIR` whose *.agent.md files the tools may read (repeatable; default the working directory)")
	fs.StringVar(&rf.endpoint, "endpoint", "", "OpenAI-compatible base `URL` (HTTPS, or http://127.0.0.1 / http://[::1])")
	fs.StringVar(&rf.keyEnv, "key-env", "", "`NAME` of the environment variable holding the endpoint's bearer credential")
	fs.StringVar(&rf.judgeEndpoint, "judge-endpoint", "", "OpenAI-compatible base `URL` for llmJudge samples")
	fs.StringVar(&rf.judgeKeyEnv, "judge-key-env", "", "`NAME` of the environment variable holding the judge endpoint's credential")
	rf.registerConcurrency(fs)
	rf.registerToolBindings(fs)
	// --http is for the conformance suite only, so it is in neither the
	// usage line nor -h (hiddenFlag).
	httpAddr := fs.String("http", "", hiddenFlag+"serve Streamable HTTP on this loopback address instead of stdio")
	level := fs.String("log-level", "warn", "stderr log `LEVEL`: debug, info, warn or error")
	pos, err := parseInterspersed(fs, args, mcpUsage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("run 'kmx mcp' with no file arguments; the client names files in tool calls", "kmx mcp: unexpected argument %q", pos[0])
	}
	if err := checkStartupRoutes(rf); err != nil {
		return err
	}
	binding, err := readToolBinding("mcp", rf)
	if err != nil {
		return err
	}
	resolved, err := mcpserver.ResolveRoots(roots)
	if err != nil {
		return usagef("name an existing folder with --root, or drop it to use the working directory", "kmx mcp: %v", err)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return usagef("use --log-level debug, info, warn or error", "kmx mcp: unknown log level %q", *level)
	}
	srv := mcpserver.New(mcpserver.Config{
		Endpoint:      rf.endpoint,
		KeyEnv:        rf.keyEnv,
		JudgeEndpoint: rf.judgeEndpoint,
		JudgeKeyEnv:   rf.judgeKeyEnv,
		Concurrency:   rf.concurrency.n,
		ToolBinding:   binding,
		Getenv:        env.Getenv,
		Roots:         resolved,
		ExplicitRoots: len(resolved) > 0,
		Version:       Version,
		Logger:        slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: lvl})),
	})
	if *httpAddr != "" {
		if err := mcpserver.CheckLoopback(*httpAddr); err != nil {
			return usagef("use --http 127.0.0.1:0", "kmx mcp: %v", err)
		}
		if err := mcpserver.ServeHTTP(ctx, srv, *httpAddr, env.Stderr); err != nil {
			return &RefusalError{Msg: "kmx mcp: " + err.Error(), Next: "choose a free port, or 127.0.0.1:0 for any"}
		}
		return nil
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}
	if err := srv.Run(ctx, t); err != nil && ctx.Err() == nil {
		return &FailureError{Msg: "kmx mcp: " + err.Error()}
	}
	return nil
}

// checkStartupRoutes refuses route flags that could never work, so a
// misconfigured server fails at startup rather than on every tool call.
// The runner checks everything again per call.
func checkStartupRoutes(rf routeFlags) error {
	check := func(endpoint, keyEnv, flag, keyFlag string) error {
		switch {
		case endpoint == "" && keyEnv != "":
			return usagef("drop "+keyFlag+", or pass "+flag+" URL for the credential to go to", "kmx mcp: %s names a credential variable, but %s is not set", keyFlag, flag)
		case endpoint == "":
			return nil
		}
		if _, err := route.ParseEndpoint(endpoint, keyEnv); err != nil {
			var ce *route.ConfigError
			if errors.As(err, &ce) {
				return &RefusalError{Msg: "kmx mcp: " + flag + ": " + ce.Msg, Next: ce.NextStep()}
			}
			return &RefusalError{Msg: "kmx mcp: " + flag + ": " + err.Error(), Next: "fix " + flag}
		}
		return nil
	}
	if err := check(rf.endpoint, rf.keyEnv, "--endpoint", "--key-env"); err != nil {
		return err
	}
	return check(rf.judgeEndpoint, rf.judgeKeyEnv, "--judge-endpoint", "--judge-key-env")
}

// nopWriteCloser keeps the SDK from closing the process's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
