// The chat panel: one webview per agent file, beside it, showing the file's
// durable conversation as the sidecar holds it (kmx/chat). Opening the
// panel reads the history, which the sidecar rebuilds from the
// conversation's journal with zero model calls; Send sends one turn; Cancel
// cancels it ($/cancelRequest) and the panel stays busy until the sidecar
// has torn the turn down; an unfinished turn offers Discard
// (kmx/chatDiscard). The extension decides nothing about the conversation.
import * as crypto from "node:crypto";
import * as vscode from "vscode";
import { type ChatView, chatPageHtml, transcriptHtml } from "./chatHtml";
import { type ChatResult, Methods } from "./protocol";
import type { Sidecar } from "./sidecar";
import { errorText } from "./testing";

/** The chat panel's webview type: VS Code restores panels of it after a reload. */
export const ChatViewType = "kmx.chat";

/** How long the panel keeps asking, after a cancel, for the turn to end. */
const settleTries = 50;
const settleDelayMs = 200;

interface FromWebview {
  type: "ready" | "send" | "cancel" | "discard";
  text?: string;
}

class ChatSession implements vscode.Disposable {
  readonly panel: vscode.WebviewPanel;
  private view: ChatView = { busy: false };
  private inFlight: vscode.CancellationTokenSource | undefined;
  private disposed = false;

  /** Opens a new panel beside the file, or takes over one VS Code restored after a reload. */
  constructor(
    private readonly sidecar: Sidecar,
    readonly uri: vscode.Uri,
    onDispose: () => void,
    restored?: vscode.WebviewPanel,
  ) {
    const title = `kmx chat: ${vscode.workspace.asRelativePath(uri)}`;
    const options = { enableScripts: true, localResourceRoots: [] };
    if (restored === undefined) {
      this.panel = vscode.window.createWebviewPanel(ChatViewType, title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false }, options);
    } else {
      this.panel = restored;
      this.panel.title = title;
      this.panel.webview.options = options;
    }
    const nonce = crypto.randomBytes(16).toString("base64");
    this.panel.webview.html = chatPageHtml(vscode.workspace.asRelativePath(uri), this.view, nonce, this.panel.webview.cspSource, uri.toString());
    this.panel.webview.onDidReceiveMessage((m: FromWebview) => void this.onMessage(m));
    this.panel.onDidDispose(() => {
      this.disposed = true;
      this.inFlight?.cancel();
      onDispose();
    });
  }

  private post(sent = false): void {
    if (!this.disposed) {
      void this.panel.webview.postMessage({ type: "state", html: transcriptHtml(this.view), busy: this.view.busy, sent });
    }
  }

  /** Reads the history (zero model calls) and shows it. */
  async refresh(): Promise<ChatResult | undefined> {
    try {
      const res = await this.sidecar.request(Methods.Chat, { uri: this.uri.toString() });
      this.view = { busy: this.view.busy, result: res };
      this.post();
      return res;
    } catch (err) {
      this.view = { ...this.view, problem: `kmx could not read the conversation: ${errorText(err)}` };
      this.post();
      return undefined;
    }
  }

  private async onMessage(m: FromWebview): Promise<void> {
    switch (m.type) {
      case "ready":
        await this.refresh();
        return;
      case "send":
        if (typeof m.text === "string") {
          await this.send(m.text);
        }
        return;
      case "cancel":
        this.inFlight?.cancel();
        return;
      case "discard":
        await this.discard();
        return;
    }
  }

  private async send(text: string): Promise<void> {
    if (this.view.busy) {
      return;
    }
    const cts = new vscode.CancellationTokenSource();
    this.inFlight = cts;
    this.view = { ...this.view, busy: true, problem: undefined };
    this.post(true);
    try {
      const res = await this.sidecar.request(Methods.Chat, { uri: this.uri.toString(), input: text }, cts.token);
      // A refusal before the conversation opened carries no transcript:
      // keep showing the history the panel has.
      this.view = { busy: false, result: res.chat === undefined ? { ...res, chat: this.view.result?.chat } : res };
    } catch (err) {
      if (!cts.token.isCancellationRequested) {
        this.view = { ...this.view, busy: false, problem: `kmx could not send the turn: ${errorText(err)}` };
      }
    } finally {
      this.inFlight = undefined;
      cts.dispose();
    }
    if (cts.token.isCancellationRequested) {
      await this.settleAfterCancel();
      return;
    }
    this.post();
  }

  /**
   * After a cancel the client stops waiting at once, but the sidecar
   * answers only when the model call has been torn down: stay busy (no
   * second turn) until the conversation is free again, then show it.
   */
  private async settleAfterCancel(): Promise<void> {
    this.view = { ...this.view, busy: true };
    this.post();
    for (let i = 0; i < settleTries && !this.disposed; i += 1) {
      const res = await this.sidecar.request(Methods.Chat, { uri: this.uri.toString() }).catch(() => undefined);
      // The history is read while a turn runs: the cancelled turn is over
      // once the sidecar no longer reports it pending.
      if (res !== undefined && res.refusal?.code !== "busy" && (res.chat?.pending ?? 0) === 0) {
        this.view = { busy: false, result: res };
        this.post();
        return;
      }
      await new Promise((r) => setTimeout(r, settleDelayMs));
    }
    this.view = { ...this.view, busy: false, problem: "the cancelled turn has not ended yet; reopen the chat to see it" };
    this.post();
  }

  private async discard(): Promise<void> {
    if (this.view.busy) {
      return;
    }
    try {
      const res = await this.sidecar.request(Methods.ChatDiscard, { uri: this.uri.toString() });
      this.view = { busy: false, result: res };
    } catch (err) {
      this.view = { ...this.view, problem: `kmx could not discard the turn: ${errorText(err)}` };
    }
    this.post();
  }

  dispose(): void {
    this.panel.dispose();
  }
}

/** One chat panel per agent file. */
export class ChatPanels implements vscode.Disposable {
  private readonly sessions = new Map<string, ChatSession>();

  private readonly subscription: vscode.Disposable;

  constructor(private readonly sidecar: Sidecar) {
    // A sidecar that stopped mid-turn (killed, crashed) is restarted by the
    // client: every open chat then reads its history again, which now says
    // whether that turn is unfinished (and offers Discard).
    this.subscription = sidecar.onReady(() => {
      for (const s of this.sessions.values()) {
        void s.refresh();
      }
    });
  }

  /** Opens (or reveals) the chat beside the agent file. */
  open(uri: vscode.Uri): void {
    const key = uri.toString();
    const existing = this.sessions.get(key);
    if (existing !== undefined) {
      existing.panel.reveal(vscode.ViewColumn.Beside);
      void existing.refresh();
      return;
    }
    this.sessions.set(key, new ChatSession(this.sidecar, uri, () => this.sessions.delete(key)));
  }

  /**
   * Takes over a panel VS Code restored after a window reload. Its state
   * is only the agent file's URI (the page's script keeps it); the history
   * comes from the sidecar, as on open. A panel whose state names no file
   * (or a file that already has a panel) is closed.
   */
  restore(panel: vscode.WebviewPanel, state: unknown): void {
    const raw = typeof state === "object" && state !== null ? (state as { uri?: unknown }).uri : undefined;
    let uri: vscode.Uri | undefined;
    try {
      uri = typeof raw === "string" ? vscode.Uri.parse(raw, true) : undefined;
    } catch {
      uri = undefined;
    }
    if (uri === undefined || uri.scheme !== "file" || this.sessions.has(uri.toString())) {
      panel.dispose();
      return;
    }
    const key = uri.toString();
    this.sessions.set(key, new ChatSession(this.sidecar, uri, () => this.sessions.delete(key), panel));
  }

  dispose(): void {
    this.subscription.dispose();
    for (const s of [...this.sessions.values()]) {
      s.dispose();
    }
  }
}
