package lsp

// work.go holds what kmx/run and kmx/test share once their params are
// decoded: the text a run uses (source: the open buffer, else the file on
// disk through agentfile.ReadFile), the runner options from the settings
// (previewOptions), and execute, which runs one invocation as long work
// with progress and cancellation.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/agentfile"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// CodeRequestFailed is LSP's RequestFailed (-32803): the request was well
// formed but the work failed (not a refusal: those are results).
const CodeRequestFailed jsonrpc2.Code = -32803

// requestFailed is work that failed for a reason other than the params, as
// RequestFailed: the message and, for a problem.Problem, its next step,
// rendered as every front renders a problem (problem.Text).
func requestFailed(method string, err error) error {
	return jsonrpc2.Errorf(CodeRequestFailed, "%s: %s", method, problem.Text(err))
}

// source is the text a run uses: the open buffer (what the user sees,
// saved or not) or, for a file that is not open, the file on disk.
type source struct {
	path    string
	text    []byte
	version int32
}

func (s *Server) source(method, uri string) (source, error) {
	path := uriPath(uri)
	if snap, ok := s.docs.snapshot(uri); ok {
		src := source{path: path, text: append([]byte(nil), snap.text...), version: snap.version}
		if src.path == "" {
			src.path = uri
		}
		return src, nil
	}
	if path == "" {
		return source{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %q is neither open nor a file URI; open the file or save it to disk", method, uri)
	}
	text, err := agentfile.ReadFile(path)
	var tooLarge *agentfile.TooLargeError
	if errors.As(err, &tooLarge) {
		return source{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %v; %s", method, err, tooLarge.NextStep())
	}
	if err != nil {
		return source{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: cannot read %s: %v; open the file in the editor or check the path", method, path, problem.PathReason(err))
	}
	return source{path: path, text: text}, nil
}

// previewOptions maps the session's settings (and a per-request model
// override) onto the runner's options.
func (s *Server) previewOptions(model string) runner.Options {
	st := s.currentSettings()
	if model == "" {
		model = st.Model
	}
	opts := runner.NewOptions(runner.Settings{
		Model:         model,
		Endpoint:      st.Endpoint,
		KeyEnv:        st.KeyEnv,
		JudgeEndpoint: st.JudgeEndpoint,
		JudgeKeyEnv:   st.JudgeKeyEnv,
		Concurrency:   st.Concurrency,
		Standing:      true,
	}, s.opts.Getenv, s.opts.Version)
	opts.Editor = s.editorHost()
	opts.NewExecutor = s.opts.NewExecutor
	// kmx lsp --tool-bindings: the editor's startup setting. A capture is
	// returned as an edit for the extension to apply (undoable).
	opts.ToolBinding = s.opts.ToolBinding
	opts.CaptureAsEdit = true
	return opts
}

// runFunc is runner.Run or runner.Test.
type runFunc func(context.Context, runner.Options, invocation.Request) (*runner.Report, error)

// execute runs one invocation as long work: it releases the message queue
// (the snapshot is taken), reports progress per example, honours
// $/cancelRequest, the progress cancel button and shutdown, and ends the
// progress completed, failed or cancelled.
func (s *Server) execute(ctx context.Context, method, title, uri string, token []byte, src source, total int, opts runner.Options, req invocation.Request, fn runFunc) (*ReportResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	id, name := s.work.start(cancel)
	release(ctx)

	prog := s.beginProgress(ctx, token, name, title, cancel)
	defer s.work.finish(id, prog.token)
	// A run that ended may be the newest to replay or re-grade.
	defer s.refreshCodeLenses(ctx)

	// Progress counts examples as they finish, in whatever order.
	done := 0
	opts.OnFinished = func(ex runner.ExampleResult) {
		done++
		pct := 100
		if total > 0 {
			pct = min(100, done*100/total)
		}
		prog.report(fmt.Sprintf("%s: %s", ex.ID, ex.Verdict), pct)
	}
	req.Path = src.path
	req.Source = src.text
	req.Read = s.readText
	rep, err := fn(ctx, opts, req)
	switch _, refused := invocation.AsRefusal(err); {
	case ctx.Err() != nil:
		prog.end(OutcomeCancelled, "stopped; examples after the one in flight were not sent")
	case refused:
		prog.end(OutcomeFailed, "refused: "+err.Error())
	case err != nil:
		prog.end(OutcomeFailed, err.Error())
		s.log.Error("run failed", "method", method, "err", err)
		return nil, requestFailed(method, err)
	default:
		prog.end(OutcomeCompleted, fmt.Sprintf("%s — %s (local preview)", rep.Verdict, rep.Summary.Counts()))
	}
	res := &ReportResult{ProtocolVersion: ProtocolVersion, URI: uri, DocumentVersion: src.version, Report: rep}
	if rep != nil {
		if edit := s.captureEdit(uri, src, rep); edit != nil {
			res.CaptureEdit = edit
		}
		res.FileEvidence = s.fileEvidence(src, rep)
	}
	return res, nil
}

// refreshCodeLenses asks a client that supports it to ask for code lenses
// again (workspace/codeLens/refresh): "Replay last run" and "Re-grade last
// run" name runs, which change when a run ends, not when the text does. It
// does not wait for the answer; a client that fails it only keeps its
// lenses until the next edit.
func (s *Server) refreshCodeLenses(ctx context.Context) {
	if !s.capabilities().codeLensRefresh {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := s.conn.Call(ctx, "workspace/codeLens/refresh", nil, nil); err != nil {
			s.log.Debug("workspace/codeLens/refresh", "err", err)
		}
	}()
}
