// The replay panel: one webview showing the server's inspection of a
// retained run (kmx/inspect, kmx.journal.inspect/v2), replayed with zero
// model calls, or the server's comparison of a run with the previous run of
// its file (kmx/diffRuns, kmx.journal.diff/v2). No scripts, no remote
// content, nothing loaded but the page; its links are command URIs of the
// two commands the panel allows.
import * as crypto from "node:crypto";
import * as vscode from "vscode";
import { comparisonHtml, diffHtml } from "./diffHtml";
import { type ComparisonDiff, Commands, type DiffRunsParams, type Inspection, type KmxRequests, Methods, type ReportResult, type RunDiff, type RunInfo } from "./protocol";
import { commandUri, replayHtml } from "./replayHtml";
import type { Sidecar } from "./sidecar";

const inspectMethod = Methods.Inspect satisfies keyof KmxRequests;

export class ReplayPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  constructor(
    private readonly sidecar: Sidecar,
    private readonly lastReports: ReadonlyMap<string, ReportResult>,
  ) {}

  /** Shows the replay of the file's newest retained run that is not executing. */
  async showLatest(file: vscode.Uri, token?: vscode.CancellationToken): Promise<void> {
    const runs = await this.sidecar.request(Methods.ListRuns, { uri: file.toString() }, token);
    const list: RunInfo[] = (runs.runs ?? []).filter((r) => r.status !== "running");
    const newest = list[list.length - 1];
    if (newest === undefined) {
      void vscode.window.showInformationMessage(`kmx: no retained run of ${vscode.workspace.asRelativePath(file)} yet: run an example or test the file first.`);
      return;
    }
    await this.show(newest.runId, token);
  }

  /** Shows the replay of one run (the Replay last run lens names it). */
  async show(runId: string, token?: vscode.CancellationToken): Promise<void> {
    const res = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `kmx: replaying run ${runId} (no model calls)`, cancellable: true },
      (_p, cancel) => this.sidecar.request(inspectMethod, { runId }, token ?? cancel),
    );
    if (res.inspection === undefined) {
      throw new Error(`the server answered no inspection for run ${runId}`);
    }
    this.render(res.inspection);
  }

  /**
   * Shows the comparison of a run (params.runId, the run on screen) or of
   * the file's newest run (params.uri) with the previous run of its file;
   * the server picks both runs.
   */
  async compare(params: DiffRunsParams, token?: vscode.CancellationToken): Promise<void> {
    const what = params.runId !== undefined ? `run ${params.runId}` : `the newest run of ${vscode.workspace.asRelativePath(vscode.Uri.parse(params.uri ?? ""))}`;
    const title = params.comparison === true ? `kmx: reading back the comparison of ${what} (no model calls)` : `kmx: comparing ${what} with the previous run (no model calls)`;
    const res = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (_p, cancel) =>
      this.sidecar.request(Methods.DiffRuns, params, token ?? cancel),
    );
    if (params.comparison === true && res.comparison !== undefined) {
      this.renderComparison(res.comparison);
      return;
    }
    if (res.diff === undefined || res.diff === null) {
      throw new Error(`the server answered no comparison for ${what}`);
    }
    this.renderDiff(res.diff);
  }

  /** The compare view of a comparison run: the grid, then each example's answers side by side. */
  private renderComparison(cd: ComparisonDiff): void {
    const panel = this.ensurePanel();
    const nonce = crypto.randomBytes(16).toString("base64");
    panel.title = `kmx compare: comparison ${cd.id}`;
    panel.webview.html = comparisonHtml(cd, nonce, panel.webview.cspSource, (runId) => commandUri(Commands.InspectRun, { runId }));
    panel.reveal(undefined, true);
  }

  private ensurePanel(): vscode.WebviewPanel {
    if (this.panel === undefined) {
      this.panel = vscode.window.createWebviewPanel("kmx.replay", "kmx replay", vscode.ViewColumn.Beside, {
        enableScripts: false,
        // Links, not scripts: the replay's "Compare with previous run of
        // this file" and the comparison's way back.
        enableCommandUris: [Commands.CompareRuns, Commands.InspectRun],
        localResourceRoots: [],
      });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
      });
    }
    return this.panel;
  }

  private renderDiff(diff: RunDiff): void {
    const panel = this.ensurePanel();
    const nonce = crypto.randomBytes(16).toString("base64");
    panel.title = `kmx compare: ${diff.b.agentId}`;
    panel.webview.html = diffHtml(diff, nonce, panel.webview.cspSource, commandUri(Commands.InspectRun, { runId: diff.b.runId }));
    panel.reveal(undefined, true);
  }

  private render(inspection: Inspection): void {
    this.panel = this.ensurePanel();
    // The inspection has no verdicts; this session's report of the same
    // run (if any) supplies them, labelled as such.
    let report: ReportResult | undefined;
    for (const r of this.lastReports.values()) {
      if (r.report?.runId === inspection.run.runId) {
        report = r;
      }
    }
    const nonce = crypto.randomBytes(16).toString("base64");
    this.panel.title = `kmx replay: ${inspection.run.agentId}`;
    const comparisonHref = inspection.comparison !== undefined ? commandUri(Commands.CompareRuns, { runId: inspection.run.runId, comparison: true }) : undefined;
    this.panel.webview.html = replayHtml(inspection, nonce, this.panel.webview.cspSource, report?.report, commandUri(Commands.CompareRuns, { runId: inspection.run.runId }), comparisonHref);
    this.panel.reveal(undefined, true);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
