package lsp

import (
	"runtime"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// journalDir is the journals folder of the state folder, without creating
// it: listing and clearing never create state.
func (s *Server) journalDir(method string) (string, error) {
	dir, _, err := journal.ExistingDir(s.opts.Getenv, runtime.GOOS)
	if err != nil {
		return "", requestFailed(method, err)
	}
	return dir, nil
}
