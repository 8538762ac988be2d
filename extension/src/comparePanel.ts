// The comparison panel: one webview showing the grid of the newest
// kmx/compareModels answer (examples × models, the sidecar's verdicts, the
// examples where the models disagree highlighted). No scripts, no remote
// content; each model's name is a command URI opening its run's replay in
// the replay panel, beside the grid, and one link opens the replay panel's
// compare view of the same comparison (answers side by side, line diff).
import * as crypto from "node:crypto";
import * as vscode from "vscode";
import { compareHtml } from "./compareHtml";
import { Commands, type CompareModelsResult } from "./protocol";
import { commandUri } from "./replayHtml";

export class ComparePanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  show(res: CompareModelsResult): void {
    if (this.panel === undefined) {
      this.panel = vscode.window.createWebviewPanel("kmx.compare", "kmx compare models", vscode.ViewColumn.Beside, {
        enableScripts: false,
        enableCommandUris: [Commands.InspectRun, Commands.CompareRuns],
        localResourceRoots: [],
      });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
      });
    }
    const nonce = crypto.randomBytes(16).toString("base64");
    const agent = res.comparison?.agent.id;
    this.panel.title = agent !== undefined ? `kmx compare: ${agent}` : "kmx compare models";
    this.panel.webview.html = compareHtml(
      res,
      nonce,
      this.panel.webview.cspSource,
      (runId) => commandUri(Commands.InspectRun, { runId }),
      (runId) => commandUri(Commands.CompareRuns, { runId, comparison: true }),
    );
    this.panel.reveal(undefined, true);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
