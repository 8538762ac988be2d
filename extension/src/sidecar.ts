// The kmx lsp process and its language client: finding the binary,
// starting it over stdio, capped restarts, settings, typed kmx requests and
// progress. Everything the extension asks the server goes through here.
import * as fs from "node:fs";
import * as os from "node:os";
import * as vscode from "vscode";
import {
  CancellationToken as LspCancellationToken,
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  RequestType,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  TransportKind,
  WorkDoneProgress,
  type WorkDoneProgressBegin,
  type WorkDoneProgressEnd,
  type WorkDoneProgressReport,
} from "vscode-languageclient/node";
import { LanguageModelHost } from "./languageModels";
import { type InitializationOptions, type KmxRequests, ProtocolVersion, type ProgressValue } from "./protocol";
import { RestartBudget } from "./restart";
import { resolveServerPath } from "./serverPath";
import { SecretKeyEnv, SecretStorageKey, serverSettings } from "./settings";

// The server has no kmx.* commands of its own (no executeCommandProvider,
// no workspace/executeCommand): the extension registers them itself and
// each sends its custom method, so a code lens click and the palette share
// one handler that shows results.
type KmxLanguageClient = LanguageClient;

export type ProgressHandler = (value: ProgressValue) => void;
type WorkDone = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

export class Sidecar implements vscode.Disposable {
  private client: KmxLanguageClient | undefined;
  private starting: Promise<KmxLanguageClient> | undefined;
  private readonly budget = new RestartBudget(3, 3 * 60_000);
  private tokens = 0;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly readyEmitter = new vscode.EventEmitter<void>();
  /** Answers the sidecar's editor-route requests through vscode.lm. */
  private readonly lm: LanguageModelHost;
  /** kmx.yaml beside agent files: the server re-checks those files when one changes. */
  private readonly settingsFiles = vscode.workspace.createFileSystemWatcher("**/kmx.yaml");
  /** Whether a credential from SecretStorage was handed to the running sidecar. */
  private hasSecret = false;
  /** Fires each time a server has started (first start and restarts). */
  readonly onReady = this.readyEmitter.event;

  constructor(
    private readonly ext: vscode.ExtensionContext,
    /** The sidecar's stderr log, and what the extension says about it. */
    readonly log: vscode.OutputChannel,
    /** The LSP message trace (kmx.trace.server). */
    private readonly trace: vscode.OutputChannel,
  ) {
    this.lm = new LanguageModelHost(log);
    this.disposables.push(
      this.readyEmitter,
      this.settingsFiles,
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("kmx.sidecarPath") || e.affectsConfiguration("kmx.toolBindings")) {
          // Startup settings: start() already told the user what is wrong; keep the log line.
          this.restart().catch((err: unknown) => this.log.appendLine(`restart after a kmx startup setting changed: ${String(err)}`));
        } else if (e.affectsConfiguration("kmx") && this.client?.isRunning() === true) {
          void this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { kmx: serverSettings(this.hasSecret) } });
        }
      }),
    );
  }

  /** The running client, starting it on first use. Rejects with a message naming what to fix. */
  ready(): Promise<KmxLanguageClient> {
    if (this.client?.isRunning() === true) {
      return Promise.resolve(this.client);
    }
    const restarting = this.client;
    if (restarting !== undefined && this.starting === undefined && restarting.state === State.Starting) {
      // The client is restarting itself after the server stopped
      // (CloseAction.Restart): wait for it rather than start a second one.
      return new Promise((resolve, reject) => {
        const sub = restarting.onDidChangeState((e) => {
          if (e.newState === State.Running) {
            sub.dispose();
            resolve(restarting);
          } else if (e.newState === State.Stopped) {
            sub.dispose();
            reject(new Error("kmx lsp did not restart; the kmx output says why"));
          }
        });
      });
    }
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async start(): Promise<KmxLanguageClient> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const where = resolveServerPath({
      setting: vscode.workspace.getConfiguration("kmx").get<string>("sidecarPath"),
      extensionPath: this.ext.extensionPath,
      platform: process.platform,
      arch: process.arch,
      home: os.homedir(),
      workspaceFolder: folder,
      isFile: (p) => {
        try {
          return fs.statSync(p).isFile();
        } catch {
          return false;
        }
      },
    });
    if (!where.ok) {
      this.log.appendLine(where.message);
      void vscode.window.showErrorMessage(where.message, "Open Settings").then((pick) => {
        if (pick === "Open Settings") {
          void vscode.commands.executeCommand("workbench.action.openSettings", "kmx.sidecarPath");
        }
      });
      throw new Error(where.message);
    }
    if (where.source === "bundled" && process.platform !== "win32") {
      ensureExecutable(where.path, this.log);
    }
    this.log.appendLine(`starting ${where.path} lsp (from ${where.source === "setting" ? "kmx.sidecarPath" : "the extension's bundled binary"})`);
    // A credential stored with kmx: Set Endpoint Credential reaches the
    // sidecar only in its environment, in memory: never in settings, an
    // LSP message or a log line.
    const secret = await this.ext.secrets.get(SecretStorageKey);
    this.hasSecret = secret !== undefined && secret !== "";
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env[SecretKeyEnv];
    if (this.hasSecret) {
      env[SecretKeyEnv] = secret;
    }
    // kmx.toolBindings is a startup setting (machine-scoped: a workspace
    // cannot choose it); the sidecar reads and checks the file.
    const bindings = vscode.workspace.getConfiguration("kmx").get<string>("toolBindings") ?? "";
    const args = bindings === "" ? ["lsp"] : ["lsp", "--tool-bindings", bindings];
    const server: ServerOptions = { command: where.path, args, transport: TransportKind.stdio, options: { env } };
    // languageModels: this client serves kmx/languageModel/* (the editor route).
    // Read at every initialize: a client that restarts itself after a crash
    // must hand the new server today's settings, not those of its creation.
    const init = (): InitializationOptions => ({ protocolVersion: ProtocolVersion, settings: serverSettings(this.hasSecret), languageModels: true });
    const options: LanguageClientOptions = {
      // VS Code's own language for agent files (its prompt support
      // registers `chatagent`), and the file pattern for editors without it.
      documentSelector: [
        { scheme: "file", language: "chatagent" },
        { scheme: "file", pattern: "**/*.agent.md" },
        { scheme: "file", pattern: "**/*.agent.examples.yaml" },
      ],
      outputChannel: this.log,
      traceOutputChannel: this.trace,
      initializationOptions: init,
      // workspace/didChangeWatchedFiles for kmx.yaml: the tool states the
      // lenses show and what a run would refuse depend on it.
      synchronize: { fileEvents: this.settingsFiles },
      // A refused initialize (a protocol-version mismatch) will not get
      // better by restarting: say so once and keep the restart budget.
      initializationFailedHandler: (error) => {
        // The server's refusal says what to change ("next: ..."): a
        // protocol mismatch, or a kmx.toolBindings file that does not hold.
        const said = error instanceof Error ? error.message : String(error);
        const msg = said.includes("next: ") || said.includes("install matching versions")
          ? `kmx lsp refused to start: ${said}`
          : `kmx lsp refused to start: ${said}. Install matching versions of the extension and kmx (or point kmx.sidecarPath at a matching kmx).`;
        this.log.appendLine(msg);
        void vscode.window.showErrorMessage(msg, "Show Logs").then((pick) => {
          if (pick === "Show Logs") {
            this.log.show(true);
          }
        });
        return false;
      },
      errorHandler: {
        error: (_error, _message, count) => ({ action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
        closed: () => {
          if (this.budget.allow(Date.now())) {
            this.log.appendLine("kmx lsp stopped unexpectedly; restarting it");
            return { action: CloseAction.Restart, handled: true };
          }
          this.notifyCrashLoop();
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    const client = new LanguageClient("kmx", "kmx", server, options);
    this.client = client;
    this.disposables.push(...this.lm.register(client));
    client.onDidChangeState(() => {
      if (client.isRunning()) {
        this.readyEmitter.fire();
      }
    });
    await client.start();
    const got = (client.initializeResult?.capabilities.experimental as { kmxProtocolVersion?: unknown } | undefined)?.kmxProtocolVersion;
    if (got !== ProtocolVersion) {
      const msg = `kmx: the sidecar speaks protocol ${String(got)} but this extension needs ${ProtocolVersion}: install matching versions (or point kmx.sidecarPath at a matching kmx).`;
      this.log.appendLine(msg);
      void vscode.window.showErrorMessage(msg);
    }
    return client;
  }

  private notifyCrashLoop(): void {
    const msg = `kmx lsp stopped ${this.budget.max + 1} times within ${this.budget.windowMs / 60_000} minutes, so it is not restarted again. Its log says why; run "kmx: Restart Language Server" after fixing it.`;
    this.log.appendLine(msg);
    void vscode.window.showErrorMessage(msg, "Show Logs").then((pick) => {
      if (pick === "Show Logs") {
        this.log.show(true);
      }
    });
  }

  /**
   * Stores (or, with "", deletes) the endpoint credential in VS Code's
   * SecretStorage (the OS keychain) and restarts the sidecar so it gets it.
   */
  async setCredential(value: string): Promise<void> {
    if (value === "") {
      await this.ext.secrets.delete(SecretStorageKey);
    } else {
      await this.ext.secrets.store(SecretStorageKey, value);
    }
    await this.restart();
  }

  async restart(): Promise<void> {
    this.budget.reset();
    const old = this.client;
    this.client = undefined;
    if (old !== undefined) {
      try {
        await old.dispose(5_000);
      } catch (err) {
        this.log.appendLine(`stopping kmx lsp: ${String(err)}`);
      }
    }
    await this.ready();
  }

  /**
   * Sends a kmx request. `progress` receives the server's $/progress values:
   * a workDoneToken is passed so the server reports to this caller instead
   * of opening a progress UI of its own. Cancelling `token` sends
   * $/cancelRequest.
   */
  async request<M extends keyof KmxRequests>(
    method: M,
    params: KmxRequests[M]["params"],
    token?: vscode.CancellationToken,
    progress?: ProgressHandler,
  ): Promise<KmxRequests[M]["result"]> {
    const client = await this.ready();
    // A typed RequestType sends params as one object; the string overload
    // would send [params, token] as a positional array.
    const type = new RequestType<KmxRequests[M]["params"], KmxRequests[M]["result"], void>(method);
    const lspToken = token as LspCancellationToken | undefined;
    if (progress === undefined) {
      return client.sendRequest(type, params, lspToken);
    }
    this.tokens += 1;
    const workDoneToken = `kmx-${this.tokens}`;
    const sub = client.onProgress(WorkDoneProgress.type, workDoneToken, (v: WorkDone) => progress(v as ProgressValue));
    try {
      return await client.sendRequest(type, { ...params, workDoneToken }, lspToken);
    } finally {
      sub.dispose();
    }
  }

  /** Converts an LSP WorkspaceEdit the server sent (in a lens argument) to VS Code's. */
  async asWorkspaceEdit(edit: unknown): Promise<vscode.WorkspaceEdit> {
    const client = await this.ready();
    const converted = await client.protocol2CodeConverter.asWorkspaceEdit(edit as Parameters<typeof client.protocol2CodeConverter.asWorkspaceEdit>[0]);
    if (converted === undefined) {
      throw new Error("the server sent no edit; restart the language server (kmx: Restart Language Server)");
    }
    return converted;
  }

  /** Stops the client and with it the sidecar; resolves once it has stopped. */
  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client === undefined) {
      return;
    }
    try {
      await client.dispose(2_000);
    } catch (err) {
      this.log.appendLine(`stopping kmx lsp: ${String(err)}`);
    }
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
    void this.stop();
  }
}

// A .vsix is a zip; an unzip that drops the mode bits would leave the
// bundled binary unrunnable, so restore them rather than fail to start.
function ensureExecutable(p: string, log: vscode.OutputChannel): void {
  try {
    const mode = fs.statSync(p).mode;
    if ((mode & 0o100) === 0) {
      fs.chmodSync(p, mode | 0o755);
      log.appendLine(`made ${p} executable`);
    }
  } catch (err) {
    log.appendLine(`could not make ${p} executable: ${String(err)}`);
  }
}
