package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/jsonrpc2"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

// initializeParams is the part of InitializeParams kmx reads.
type initializeParams struct {
	Capabilities struct {
		Window struct {
			WorkDoneProgress bool `json:"workDoneProgress"`
		} `json:"window"`
		Workspace struct {
			CodeLens struct {
				RefreshSupport bool `json:"refreshSupport"`
			} `json:"codeLens"`
		} `json:"workspace"`
	} `json:"capabilities"`
	InitializationOptions *json.RawMessage `json:"initializationOptions"`
}

// initialize moves the session to initialized and says what the server
// offers: full or incremental sync (we ask for incremental), code lenses,
// the kmx commands, and the contract version.
func (s *Server) initialize(ctx context.Context, raw json.RawMessage) (any, error) {
	var p initializeParams
	if err := decode("initialize", raw, &p); err != nil {
		return nil, err
	}
	if err := s.opts.StartupRefusal; err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s", problem.Text(err))
	}
	var opts InitializationOptions
	var settingsProblem string
	if p.InitializationOptions != nil && string(*p.InitializationOptions) != "null" {
		if err := json.Unmarshal(*p.InitializationOptions, &opts); err != nil {
			return nil, invalidParams("initialize", err)
		}
		if opts.ProtocolVersion != "" && opts.ProtocolVersion != ProtocolVersion {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams,
				"initialize: the extension speaks %q but this kmx speaks %q; install matching versions of the extension and kmx",
				opts.ProtocolVersion, ProtocolVersion)
		}
		settingsProblem = checkSettings(opts.Settings)
	}

	var settings *Settings
	if settingsProblem == "" {
		settings = &opts.Settings
	}
	caps := clientCapabilities{
		workDoneProgress: p.Capabilities.Window.WorkDoneProgress,
		languageModels:   opts.LanguageModels,
		codeLensRefresh:  p.Capabilities.Workspace.CodeLens.RefreshSupport,
	}
	if !s.begin(caps, settings) {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "initialize: already initialized; send it once per session")
	}

	if settingsProblem != "" {
		s.refuseSettings(ctx, "initializationOptions", settingsProblem)
	}
	s.log.Info("initialized", "protocol", ProtocolVersion, "workDoneProgress", p.Capabilities.Window.WorkDoneProgress, "languageModels", opts.LanguageModels)

	// No executeCommandProvider: the kmx.* commands are the extension's
	// (one handler for a lens click and the palette), and each sends its
	// custom method; the server serves no workspace/executeCommand.
	return &initializeResult{
		Capabilities: serverCapabilities{
			TextDocumentSync: &textDocumentSyncOptions{
				OpenClose: true,
				Change:    textDocumentSyncKindIncremental,
				Save:      &saveOptions{IncludeText: false},
			},
			CodeLensProvider:   &codeLensOptions{ResolveProvider: false},
			CodeActionProvider: &codeActionOptions{CodeActionKinds: []string{codeActionKindQuickFix}},
			Experimental:       map[string]any{"kmxProtocolVersion": ProtocolVersion},
		},
		ServerInfo: &serverInfo{Name: "kmx", Version: s.opts.Version},
	}, nil
}
