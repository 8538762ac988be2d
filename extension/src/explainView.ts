// Explain Last Test Failure: a read-only Markdown document whose text the
// server gives (kmx/explain, offline: no model, provider, credential or
// journal access), shown rendered in VS Code's Markdown preview. A virtual
// document, so closing it never asks to save.
import * as vscode from "vscode";
import { explainMarkdown } from "./explainMarkdown";
import { Methods } from "./protocol";
import type { Sidecar } from "./sidecar";

export const ExplainScheme = "kmx-explain";

export class ExplainView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration: vscode.Disposable;

  constructor(private readonly sidecar: Sidecar) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(ExplainScheme, this);
  }

  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const file = decodeURIComponent(uri.query);
    try {
      const res = await this.sidecar.request(Methods.Explain, { uri: file }, token);
      return explainMarkdown(res);
    } catch (err) {
      return `# kmx could not explain this file\n\n${err instanceof Error ? err.message : String(err)}\n`;
    }
  }

  /** Opens (or refreshes) the explanation of an agent file beside it. */
  async show(file: vscode.Uri): Promise<void> {
    const name = file.path.split("/").pop() ?? "agent";
    const uri = vscode.Uri.from({ scheme: ExplainScheme, path: `/${name.replace(/\.md$/, "")}.explain.md`, query: encodeURIComponent(file.toString()) });
    this.changed.fire(uri);
    // Rendered, not Markdown source: VS Code's own Markdown preview, beside
    // the file (the values in it are escaped by explainMarkdown).
    await vscode.workspace.openTextDocument(uri);
    await vscode.commands.executeCommand("markdown.showPreviewToSide", uri);
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}
