// The replay panel: one webview showing the server's inspection of a
// retained run (kmx.journal.inspect/v1), replayed with zero model calls.
// No scripts, no remote content, nothing loaded but the page itself.
import * as crypto from "node:crypto";
import * as vscode from "vscode";
import { Methods, type ReportResult, type RunInfo } from "./protocol";
import { replayHtml } from "./replayHtml";
import type { Sidecar } from "./sidecar";

// The inspect request is not in the generated contract yet (docs/protocol.md
// lists it as "not offered yet"). Reading it from the generated Methods
// means it switches on when the contract gains it, and never before.
function inspectMethod(): string | undefined {
  return (Methods as Readonly<Record<string, string>>)["Inspect"];
}

export class ReplayPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  constructor(
    private readonly sidecar: Sidecar,
    private readonly lastReports: ReadonlyMap<string, ReportResult>,
  ) {}

  /** Shows the replay of `runId`, or of the file's newest run when runId is undefined. */
  async show(file: vscode.Uri, runId: string | undefined, token?: vscode.CancellationToken): Promise<void> {
    let id = runId;
    if (id === undefined) {
      const runs = await this.sidecar.request(Methods.ListRuns, { uri: file.toString() }, token);
      const list: RunInfo[] = runs.runs ?? [];
      const newest = list[list.length - 1];
      if (newest === undefined) {
        void vscode.window.showInformationMessage(`kmx: no retained run of ${vscode.workspace.asRelativePath(file)} yet: run an example or test the file first.`);
        return;
      }
      id = newest.id;
    }
    const method = inspectMethod();
    if (method === undefined) {
      void vscode.window.showWarningMessage(
        `kmx: this sidecar cannot replay run ${id} in the editor yet (its protocol has no inspect request). Replay it from a terminal: kmx journal inspect ${id}`,
      );
      return;
    }
    const res = await this.sidecar.optionalRequest(method, { uri: file.toString(), runId: id }, token);
    // The result is either the inspection or an envelope holding it.
    const inspection = typeof res === "object" && res !== null && "inspection" in res ? (res as { inspection: unknown }).inspection : res;
    this.render(inspection, this.lastReports.get(file.toString()));
  }

  private render(inspection: unknown, last: ReportResult | undefined): void {
    if (this.panel === undefined) {
      this.panel = vscode.window.createWebviewPanel("kmx.replay", "kmx replay", vscode.ViewColumn.Beside, {
        enableScripts: false,
        localResourceRoots: [],
      });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
      });
    }
    const nonce = crypto.randomBytes(16).toString("base64");
    this.panel.webview.html = replayHtml(inspection, nonce, this.panel.webview.cspSource, last?.report);
    this.panel.reveal(undefined, true);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
