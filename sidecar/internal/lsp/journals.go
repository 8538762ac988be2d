package lsp

import (
	"runtime"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// journalDir is the journals folder of the state folder, without creating
// it: listing and clearing never create state.
func (s *Server) journalDir(method string) (string, error) {
	dir, _, err := journal.ExistingDir(s.opts.Getenv, runtime.GOOS)
	if err != nil {
		return "", jsonrpc2.Errorf(CodeRequestFailed, "%s: %s", method, problem.Text(err))
	}
	return dir, nil
}
