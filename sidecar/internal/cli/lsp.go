package cli

import (
	"context"
	"io"
	"log/slog"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/lsp"
)

const lspUsage = "kmx lsp [--stdio] [--log-level debug|info|warn|error] [--tool-bindings PATH]"

// runLSP serves the language server on stdin/stdout until the client sends
// exit. Stdout carries only the protocol; the log goes to stderr (the
// extension's output channel). Exit code 0 after shutdown then exit, 1
// otherwise, as LSP asks.
func runLSP(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("lsp")
	// vscode-languageclient passes --stdio for the stdio transport; stdio
	// is the only transport, so the flag is accepted and changes nothing.
	fs.Bool("stdio", true, "serve on stdin/stdout (the only transport)")
	level := fs.String("log-level", "info", "stderr log `LEVEL`: debug, info, warn or error")
	var rf routeFlags
	rf.registerToolBindings(fs)
	pos, err := parseInterspersed(fs, args, lspUsage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("run 'kmx lsp' with no file arguments; the editor sends the files", "kmx lsp: unexpected argument %q", pos[0])
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return usagef("use --log-level debug, info, warn or error", "kmx lsp: unknown log level %q", *level)
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: lvl}))
	// A binding file that does not hold is answered at initialize (the
	// editor shows it once), not by exiting: the extension would restart
	// an exiting server until its budget ran out.
	binding, refusal := readToolBinding("lsp", rf)
	if refusal != nil {
		log.Error("refusing to initialize", "problem", refusal.Error())
	}
	stream := jsonrpc2.NewStream(stdio{in: env.Stdin, out: env.Stdout})
	code := lsp.Serve(ctx, stream, lsp.Options{Logger: log, Getenv: env.Getenv, Version: Version, ToolBinding: binding, StartupRefusal: refusal})
	if code != lsp.ExitOK {
		return &FailureError{Msg: "kmx lsp: exit without shutdown"}
	}
	return nil
}

// stdio joins stdin and stdout into the one stream jsonrpc2 reads and
// writes. Close closes stdin when it can, so the reader stops.
type stdio struct {
	in  io.Reader
	out io.Writer
}

func (s stdio) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s stdio) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s stdio) Close() error {
	if c, ok := s.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
