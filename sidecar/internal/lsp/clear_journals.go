package lsp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// clearJournals serves kmx/clearJournals (and kmx.clearJournals) with
// journal.Clear: a run still executing is kept and said so, never deleted.
func (s *Server) clearJournals(_ context.Context, p ClearJournalsParams) (*ClearJournalsResult, error) {
	if p.RunID != "" && !journal.ValidRunID(p.RunID) {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %q is not a run ID; take one from %s", MethodClearJournals, p.RunID, MethodListRuns)
	}
	out := &ClearJournalsResult{ProtocolVersion: ProtocolVersion, Removed: []string{}, Kept: []string{}}
	dir, err := s.journalDir(MethodClearJournals)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if p.RunID != "" {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: there is no run %s: no journals exist yet", MethodClearJournals, p.RunID)
		}
		out.Message = "no journals to clear"
		return out, nil
	}
	cleared, err := journal.Clear(dir, p.RunID)
	out.Removed = append(out.Removed, cleared.Removed...)
	var running *journal.RunningError
	var notFound *journal.NotFoundError
	switch {
	case errors.As(err, &running):
		out.Kept = append(out.Kept, running.RunIDs...)
		out.Message = fmt.Sprintf("removed %d run(s); %s", len(out.Removed), running.Error())
	case errors.As(err, &notFound):
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %s", MethodClearJournals, problem.Text(err))
	case err != nil:
		return nil, requestFailed(MethodClearJournals, err)
	default:
		out.Message = fmt.Sprintf("removed %d run(s)", len(out.Removed))
		if len(out.Removed) > 0 {
			out.Message += ": " + strings.Join(out.Removed, ", ")
		}
	}
	return out, nil
}
