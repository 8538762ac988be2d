// The kmx VS Code extension: thin by design. It finds and starts the
// sidecar (`kmx lsp`), renders what the server says (lenses and diagnostics
// arrive through the language client as they are; test results, Explain and
// replays through kmx requests), and registers commands. It never parses an
// agent file, opens a journal or holds a credential.
import * as vscode from "vscode";
import { ChatPanels, ChatViewType } from "./chatPanel";
import { pickModels, registerCommands } from "./commands";
import { ComparePanel } from "./comparePanel";
import { ExplainView } from "./explainView";
import { ReplayPanel } from "./replayPanel";
import { Sidecar } from "./sidecar";
import { ModelStatus } from "./statusBar";
import { KmxTests } from "./testing";

// The one sidecar of this activation, so deactivate can wait for it to stop.
let current: Sidecar | undefined;

export function activate(context: vscode.ExtensionContext): void {
  // "kmx": the sidecar's stderr and what the extension says about it;
  // "kmx LSP trace": the protocol messages, when kmx.trace.server asks.
  const log = vscode.window.createOutputChannel("kmx");
  const trace = vscode.window.createOutputChannel("kmx LSP trace");
  const sidecar = new Sidecar(context, log, trace);
  current = sidecar;
  const status = new ModelStatus();
  let replay: ReplayPanel | undefined;
  const compare = new ComparePanel();
  const tests = new KmxTests(
    sidecar,
    log,
    async (file) => {
      await replay?.showLatest(file);
    },
    { pickModels, show: (res) => compare.show(res) },
  );
  replay = new ReplayPanel(sidecar, tests.lastReports);
  const explain = new ExplainView(sidecar);
  const chat = new ChatPanels(sidecar);
  context.subscriptions.push(
    log,
    trace,
    sidecar,
    status,
    tests,
    replay,
    explain,
    chat,
    compare,
    tests.onReport((r) => status.fromReport(r)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("kmx")) {
        status.settingsChanged();
      }
    }),
    ...registerCommands({ sidecar, tests, explain, replay, status, chat, compare }),
    // Chat panels come back after a window reload (onWebviewPanel:kmx.chat).
    vscode.window.registerWebviewPanelSerializer(ChatViewType, {
      deserializeWebviewPanel: (panel, state: unknown) => {
        chat.restore(panel, state);
        return Promise.resolve();
      },
    }),
  );
  // Start at once: diagnostics and lenses should be there when the file is.
  sidecar.ready().catch((err: unknown) => {
    log.appendLine(`kmx lsp did not start: ${err instanceof Error ? err.message : String(err)}`);
  });
}

/** Waits for the language client to stop (shutdown, exit), so the sidecar never outlives the window. */
export async function deactivate(): Promise<void> {
  const s = current;
  current = undefined;
  await s?.stop();
}
