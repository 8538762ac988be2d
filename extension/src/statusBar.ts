// The status bar item: the model route runs will use (from the settings)
// or, after a run, the route the server reported. Clicking selects a model.
import * as vscode from "vscode";
import { EditorCommands, type ReportResult } from "./protocol";
import { readSettings } from "./settings";

export class ModelStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("kmx.model", vscode.StatusBarAlignment.Right, 100);
  private reported: string | undefined;

  constructor() {
    this.item.name = "kmx model route";
    this.item.command = EditorCommands.SelectModel;
    this.update();
    this.item.show();
  }

  /** After a run: the route and model the server says it used. */
  fromReport(res: ReportResult): void {
    const agent = res.report?.route.agent;
    if (agent !== undefined && agent.route !== "") {
      this.reported = `${agent.route}: ${agent.model}`;
    }
    this.update();
  }

  /** Settings changed: what the server reported before may no longer hold. */
  settingsChanged(): void {
    this.reported = undefined;
    this.update();
  }

  private update(): void {
    const s = readSettings();
    const configured = s.model !== undefined ? s.model : "file's model";
    const where = s.endpoint !== undefined ? ` @ ${hostOf(s.endpoint)}` : "";
    const text = this.reported ?? `${configured}${where}`;
    this.item.text = `$(beaker) kmx: ${text}`;
    this.item.tooltip = `kmx model route (local preview): ${text}. Click to select a model.`;
  }

  dispose(): void {
    this.item.dispose();
  }
}

function hostOf(endpoint: string): string {
  try {
    return new URL(endpoint).host;
  } catch {
    return "endpoint";
  }
}
