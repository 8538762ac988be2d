// The Test Explorer: one item per agent file, a child per example (ranges
// from the server's kmx/examples, so gutter icons sit on each `- id:` line),
// under a multi-turn example a child per turn (on its `- input:` line), a
// Run profile and a "Replay offline" profile. Code lens runs and explorer
// runs both end in applyReport, so they update the same results.
import * as vscode from "vscode";
import { cellWord, columnHeader } from "./compareHtml";
import { type CompareModelsResult, type ExampleInfo, type ExampleResult, Methods, type Range, type Report, type ReportResult, Verdicts } from "./protocol";
import { flakyText, type Outcome, outcomesFor, regradeLine, summaryLine, toolLines, turnOutcomes, usageLines, usageMark } from "./results";
import type { Sidecar } from "./sidecar";

export function toRange(r: Range): vscode.Range {
  return new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character);
}

const exampleSep = "::";
/** A turn item's ID is its example item's ID, this, and the turn number (the journal names turns ID/turn:N). */
const turnSep = "/turn:";

/** What the "Compare models…" profile needs from the commands: the models to compare, and the grid's panel. */
export interface CompareUI {
  pickModels(): Promise<string[] | undefined>;
  show(res: CompareModelsResult): void;
}

export class KmxTests implements vscode.Disposable {
  readonly controller: vscode.TestController;
  /** The newest report per file URI, from any run (lens, palette or explorer). */
  readonly lastReports = new Map<string, ReportResult>();
  /** The settingsRevision of each file item's latest result. */
  private readonly settingsRevisions = new Map<string, string>();
  private readonly reportEmitter = new vscode.EventEmitter<ReportResult>();
  readonly onReport = this.reportEmitter.event;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  /** "flaky 3/5" per example item ID, from the newest run of that item that was flaky. */
  private readonly flaky = new Map<string, string>();
  /** "98 tokens" per example or turn item ID, from the newest run of it that reported usage. */
  private readonly usage = new Map<string, string>();
  /** What each example or turn item's description says before its usage. */
  private readonly bases = new Map<string, string>();

  constructor(
    private readonly sidecar: Sidecar,
    private readonly log: vscode.OutputChannel,
    replayOffline: (file: vscode.Uri) => Promise<void>,
    compareUI?: CompareUI,
  ) {
    const c = vscode.tests.createTestController("kmx", "kmx agents (local preview)");
    this.controller = c;
    c.resolveHandler = async (item) => {
      if (item === undefined) {
        await this.discover();
      } else if (item.uri !== undefined) {
        await this.refresh(item.uri);
      }
    };
    c.refreshHandler = async () => {
      await this.discover();
    };
    c.createRunProfile("Run", vscode.TestRunProfileKind.Run, (req, token) => this.runRequest(req, token), true);
    // Trials: every example runs profileTrials times, each in a fresh
    // Session; mixed outcomes are marked flaky (docs/trials.md).
    c.createRunProfile(`Test file ×${profileTrials}`, vscode.TestRunProfileKind.Run, (req, token) => this.runRequest(req, token, profileTrials), false);
    c.createRunProfile(
      "Replay offline",
      vscode.TestRunProfileKind.Run,
      async (req) => {
        // A replay is not a test: it reopens the newest journal in the
        // replay panel and leaves the items' results alone.
        const files = new Map<string, vscode.Uri>();
        for (const item of req.include ?? this.allFileItems()) {
          if (item.uri !== undefined) {
            files.set(item.uri.toString(), item.uri);
          }
        }
        for (const uri of files.values()) {
          await replayOffline(uri);
        }
      },
      false,
    );
    if (compareUI !== undefined) {
      // The same examples on two or more models the user picks: each model
      // its own run, the grid in the comparison panel (docs/compare.md).
      c.createRunProfile("Compare models…", vscode.TestRunProfileKind.Run, (req, token) => this.compareRequest(req, token, compareUI), false);
    }
    const watcher = vscode.workspace.createFileSystemWatcher("**/*.agent{.md,.examples.yaml}");
    // kmx.yaml changes the tool states a run freezes: refresh the agent
    // files beside it (their results may now be out of date).
    const settings = vscode.workspace.createFileSystemWatcher("**/kmx.yaml");
    const settingsChanged = (u: vscode.Uri) => {
      for (const item of this.allFileItems()) {
        if (item.uri !== undefined && sameFolder(item.uri, u)) {
          this.schedule(item.uri);
        }
      }
    };
    this.disposables.push(
      c,
      this.reportEmitter,
      watcher,
      watcher.onDidCreate((u) => this.schedule(u)),
      watcher.onDidChange((u) => this.schedule(u)),
      watcher.onDidDelete((u) => (isExamplesFile(u) ? this.schedule(u) : c.items.delete(u.toString()))),
      settings,
      settings.onDidCreate(settingsChanged),
      settings.onDidChange(settingsChanged),
      settings.onDidDelete(settingsChanged),
      vscode.workspace.onDidOpenTextDocument((d) => this.schedule(d.uri)),
      vscode.workspace.onDidChangeTextDocument((e) => this.schedule(e.document.uri)),
      sidecar.onReady(() => void this.discover()),
    );
  }

  private allFileItems(): vscode.TestItem[] {
    const out: vscode.TestItem[] = [];
    this.controller.items.forEach((i) => out.push(i));
    return out;
  }

  private isAgentFile(uri: vscode.Uri): boolean {
    return uri.scheme === "file" && uri.path.endsWith(".agent.md");
  }

  // Typing changes examples; ask the server again once the typing pauses.
  // A sibling examples file's changes refresh its agent file's item.
  private schedule(changed: vscode.Uri): void {
    const uri = agentUri(changed);
    if (!this.isAgentFile(uri)) {
      return;
    }
    const key = uri.toString();
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        void this.refresh(uri);
      }, 400),
    );
  }

  async discover(): Promise<void> {
    const files = await vscode.workspace.findFiles("**/*.agent.md", "**/node_modules/**", 500);
    for (const uri of files) {
      this.fileItem(uri);
    }
    for (const d of vscode.workspace.textDocuments) {
      if (this.isAgentFile(d.uri)) {
        this.fileItem(d.uri);
      }
    }
    await Promise.all(this.allFileItems().map((i) => (i.uri !== undefined ? this.refresh(i.uri) : Promise.resolve())));
  }

  /** The item of an agent file; its sibling examples file's URI names the same item. */
  fileItem(of: vscode.Uri): vscode.TestItem {
    const uri = agentUri(of);
    const key = uri.toString();
    let item = this.controller.items.get(key);
    if (item === undefined) {
      item = this.controller.createTestItem(key, vscode.workspace.asRelativePath(uri), uri);
      item.canResolveChildren = true;
      this.controller.items.add(item);
    }
    return item;
  }

  /** Rebuilds a file's children from the server's view of its text. */
  async refresh(of: vscode.Uri): Promise<void> {
    const uri = agentUri(of);
    const item = this.fileItem(uri);
    let res;
    try {
      item.busy = true;
      res = await this.sidecar.request(Methods.Examples, { uri: uri.toString() });
    } catch (err) {
      this.log.appendLine(`kmx/examples ${uri.toString()}: ${String(err)}`);
      return;
    } finally {
      item.busy = false;
    }
    // A result is out of date when kmx.yaml now says something else than
    // the settings its run froze (settingsRevision), even if the agent
    // file did not change.
    const frozen = this.settingsRevisions.get(item.id);
    if (frozen !== undefined && res.state === "valid" && frozen !== (res.tools.revision ?? "")) {
      this.controller.invalidateTestResults(item);
      this.settingsRevisions.delete(item.id);
    }
    if (res.state === "invalid") {
      item.error = "kmx refuses this file: see the Problems panel for what to change";
    } else {
      item.error = undefined;
    }
    if (res.examplesHeading !== undefined) {
      item.range = toRange(res.examplesHeading);
    }
    // The header's display name ("C# Expert") beside the file's path.
    item.description = res.agentName !== undefined && res.agentName !== res.agentId ? res.agentName : undefined;
    const examples: ExampleInfo[] = res.examples ?? [];
    // While a file is being written it may parse to nothing for a moment;
    // keep the children it had rather than make them flicker away.
    if (examples.length === 0 && res.state !== "valid") {
      return;
    }
    const children: vscode.TestItem[] = [];
    for (const ex of examples) {
      const id = `${uri.toString()}${exampleSep}${ex.id}`;
      // With a sibling examples file the examples (and their ranges) are in it.
      const at = res.examplesUri !== undefined ? vscode.Uri.parse(res.examplesUri) : uri;
      const existing = item.children.get(id);
      const child = existing !== undefined && existing.uri?.toString() === at.toString() ? existing : this.controller.createTestItem(id, ex.id, at);
      child.range = toRange(ex.range);
      // The newest run's flaky mark outlives a refresh (one may land just
      // after the run, e.g. when the item is expanded).
      const asserts = ex.turns !== undefined ? `${ex.turns.length} turns` : (ex.assertions ?? []).map((a) => a.type).join(", ");
      child.description = this.describe(id, this.flaky.get(id) ?? asserts);
      // A multi-turn example: a child per turn, each with its own result.
      const turns: vscode.TestItem[] = [];
      for (const t of ex.turns ?? []) {
        const tid = `${id}${turnSep}${t.turn}`;
        const old = child.children.get(tid);
        const turn = old !== undefined && old.label === t.label && old.uri?.toString() === at.toString() ? old : this.controller.createTestItem(tid, t.label, at);
        turn.range = toRange(t.range);
        turn.description = this.describe(tid, this.flaky.get(tid) ?? (t.assertions ?? []).map((a) => a.type).join(", "));
        turns.push(turn);
      }
      child.children.replace(turns);
      children.push(child);
    }
    item.children.replace(children);
  }

  /**
   * An item's description: what it asserts (or its flaky mark), then the
   * newest run's token usage. base replaces what the item says before the
   * usage; without it the last one given stays.
   */
  private describe(id: string, base?: string): string {
    if (base !== undefined) {
      this.bases.set(id, base);
    }
    const b = this.bases.get(id) ?? "";
    const u = this.usage.get(id);
    return u === undefined ? b : b === "" ? u : `${b} · ${u}`;
  }

  exampleItem(of: vscode.Uri, exampleId: string): vscode.TestItem | undefined {
    const uri = agentUri(of);
    return this.fileItem(uri).children.get(`${uri.toString()}${exampleSep}${exampleId}`);
  }

  private async runRequest(req: vscode.TestRunRequest, token: vscode.CancellationToken, trials?: number): Promise<void> {
    const run = this.controller.createTestRun(req, undefined, true);
    try {
      await this.runItems(run, req.include ?? this.allFileItems(), req.exclude ?? [], token, undefined, trials);
    } finally {
      run.end();
    }
  }

  /**
   * Tests the file of `uri` (all of it) as a Test Explorer run; the lens and
   * palette use this. With `fromRun` it is the Re-grade last run lens: the
   * same test, of that run's journaled answers (docs/regrade.md).
   */
  async testFile(uri: vscode.Uri, token: vscode.CancellationToken, progress?: (message: string) => void, fromRun?: string): Promise<ReportResult | undefined> {
    const item = this.fileItem(uri);
    await this.refresh(uri);
    const name = fromRun !== undefined ? `kmx: re-grade run ${fromRun}` : `kmx: test ${vscode.workspace.asRelativePath(uri)}`;
    const run = this.controller.createTestRun(new vscode.TestRunRequest([item]), name, true);
    try {
      const reports = await this.runItems(run, [item], [], token, progress, undefined, fromRun);
      return reports[0];
    } finally {
      run.end();
    }
  }

  /**
   * The selection by file: one request per file, with the chosen examples,
   * or none (whole: the whole file) when a file item was chosen.
   */
  private byFile(include: readonly vscode.TestItem[], exclude: readonly vscode.TestItem[]): { file: vscode.TestItem; uri: vscode.Uri; chosen: vscode.TestItem[]; whole: boolean }[] {
    const byFile = new Map<string, { file: vscode.TestItem; examples: vscode.TestItem[] | undefined }>();
    const excluded = new Set(exclude.map((i) => i.id));
    for (const picked of include) {
      // A turn runs as its whole example: the script is one conversation.
      const item = picked.parent?.parent !== undefined ? picked.parent : picked;
      const file = item.parent ?? item;
      const entry = byFile.get(file.id) ?? { file, examples: [] };
      if (item.parent === undefined) {
        entry.examples = undefined;
      } else if (entry.examples !== undefined && !entry.examples.includes(item)) {
        entry.examples.push(item);
      }
      byFile.set(file.id, entry);
    }
    const out: { file: vscode.TestItem; uri: vscode.Uri; chosen: vscode.TestItem[]; whole: boolean }[] = [];
    for (const { file, examples } of byFile.values()) {
      if (file.uri === undefined) {
        continue;
      }
      const chosen = (examples ?? childrenOf(file)).filter((c) => !excluded.has(c.id));
      out.push({ file, uri: file.uri, chosen, whole: examples === undefined && excluded.size === 0 });
    }
    return out;
  }

  private async runItems(
    run: vscode.TestRun,
    include: readonly vscode.TestItem[],
    exclude: readonly vscode.TestItem[],
    token: vscode.CancellationToken,
    progress?: (message: string) => void,
    trials?: number,
    fromRun?: string,
  ): Promise<ReportResult[]> {
    const reports: ReportResult[] = [];
    for (const { file, uri, chosen, whole } of this.byFile(include, exclude)) {
      if (token.isCancellationRequested) {
        break;
      }
      const ids = chosen.map((c) => c.label);
      for (const c of chosen) {
        run.started(c);
        c.children.forEach((t) => run.started(t));
      }
      let res: ReportResult;
      try {
        res = await this.sidecar.request(
          Methods.Test,
          { uri: uri.toString(), ...(whole ? {} : { examples: ids }), ...(trials !== undefined ? { trials } : {}), ...(fromRun !== undefined ? { fromRun } : {}) },
          token,
          (v) => {
            if (v.message !== undefined) {
              run.appendOutput(`${v.message}\r\n`);
              progress?.(v.message);
            }
          },
        );
      } catch (err) {
        const text = token.isCancellationRequested ? "inconclusive: cancelled" : `inconclusive: kmx could not test this file: ${errorText(err)}`;
        for (const c of chosen) {
          run.errored(c, new vscode.TestMessage(text));
          c.children.forEach((t) => run.errored(t, new vscode.TestMessage(text)));
        }
        continue;
      }
      this.applyReport(run, file, res, chosen);
      await this.applyCapture(res, run);
      reports.push(res);
    }
    return reports;
  }

  /**
   * The "Compare models…" profile: asks for the models once, then compares
   * each selected file's chosen examples on them (kmx/compareModels), marks
   * each example with its row's verdict (pass only when every model passed
   * it) and each model's cell, and shows the grid.
   */
  private async compareRequest(req: vscode.TestRunRequest, token: vscode.CancellationToken, ui: CompareUI): Promise<void> {
    const models = await ui.pickModels();
    if (models === undefined) {
      return;
    }
    const run = this.controller.createTestRun(req, `kmx: compare ${models.join(", ")}`, true);
    try {
      for (const { uri, chosen, whole } of this.byFile(req.include ?? this.allFileItems(), req.exclude ?? [])) {
        if (token.isCancellationRequested) {
          break;
        }
        for (const c of chosen) {
          run.started(c);
          c.children.forEach((t) => run.started(t));
        }
        let res: CompareModelsResult;
        try {
          res = await this.sidecar.request(Methods.CompareModels, { uri: uri.toString(), models, ...(whole ? {} : { examples: chosen.map((c) => c.label) }) }, token, (v) => {
            if (v.message !== undefined) {
              run.appendOutput(`${v.message}\r\n`);
            }
          });
        } catch (err) {
          const text = token.isCancellationRequested ? "inconclusive: cancelled" : `inconclusive: kmx could not compare this file: ${errorText(err)}`;
          for (const c of chosen) {
            run.errored(c, new vscode.TestMessage(text));
            c.children.forEach((t) => run.errored(t, new vscode.TestMessage(text)));
          }
          continue;
        }
        this.applyComparison(run, chosen, res);
        ui.show(res);
      }
    } finally {
      run.end();
    }
  }

  /** Marks examples from a comparison: the row's verdict, and every model's cell in the message. */
  applyComparison(run: vscode.TestRun, items: readonly vscode.TestItem[], res: CompareModelsResult): void {
    const g = res.comparison;
    if (g === undefined) {
      const text = `refused: ${res.refusal?.message ?? "kmx answered no comparison"}${res.refusal?.next !== undefined ? `; ${res.refusal.next}` : ""}`;
      for (const item of items) {
        run.errored(item, new vscode.TestMessage(text));
        item.children.forEach((t) => run.errored(t, new vscode.TestMessage(text)));
      }
      run.appendOutput(`kmx: ${text}\r\n`);
      return;
    }
    const cols = g.columns ?? [];
    for (const item of items) {
      const row = (g.rows ?? []).find((r) => r.id === item.label);
      if (row === undefined) {
        run.skipped(item);
        item.children.forEach((t) => run.skipped(t));
        continue;
      }
      const cells = cols.map((c, i) => `${columnHeader(c)}: ${row.cells?.[i] !== undefined ? cellWord(row.cells[i]) : "—"}`).join("\n");
      markCompared(run, item, row.verdict, `${row.differs === true ? "the models disagree\n" : ""}${cells}`);
      // A multi-turn example's turns: each with its row's turn verdict
      // (worst over the models, computed by the server) and every
      // model's cell for that turn in the message.
      item.children.forEach((t) => {
        const n = Number(t.id.slice(t.id.lastIndexOf(turnSep) + turnSep.length));
        const turn = row.turns?.find((r) => r.turn === n);
        if (turn === undefined) {
          run.skipped(t);
          return;
        }
        const per = cols
          .map((c, i) => {
            const cell = row.cells?.[i]?.turns?.find((r) => r.turn === n);
            return `${columnHeader(c)}: ${cell !== undefined ? cellWord(cell) : "—"}`;
          })
          .join("\n");
        markCompared(run, t, turn.verdict, `${item.label} turn ${n}\n${per}`);
      });
    }
    const s = g.summary;
    run.appendOutput(`${g.agent.path}: ${(g.rows ?? []).length} examples × ${cols.filter((c) => c.side !== "baseline").length} models: ${s.pass} pass, ${s.fail} fail, ${s.unknown} unknown — verdict ${g.verdict} (local preview)\r\n`);
    for (const c of cols) {
      if (c.runId !== undefined) {
        run.appendOutput(`${columnHeader(c)}: run ${c.runId}\r\n`);
      }
    }
  }

  /** Marks the items of one file from a report: the one place results are shown. */
  applyReport(run: vscode.TestRun, file: vscode.TestItem, res: ReportResult, items: readonly vscode.TestItem[]): void {
    const report: Report | undefined = res.report;
    const outcomes = outcomesFor(
      report,
      items.map((i) => i.label),
      res.fileEvidence ?? [],
    );
    items.forEach((item, n) => {
      const o = outcomes[n];
      if (o !== undefined) {
        applyOutcome(run, item, o);
        const ex = report?.examples?.find((e) => e.id === item.label && e.adHoc !== true);
        // Each turn's own verdict on its child; a turn the report does
        // not list (the example was refused, or the file changed since
        // the run started) is skipped, never passed.
        const byTurn = new Map((ex !== undefined ? turnOutcomes(ex) : []).map((t) => [`${item.id}${turnSep}${t.id.slice("turn:".length)}`, t]));
        // Over trials each turn's verdict, counts and message are its
        // outcome over the trials (the server folds them).
        const turnResults = new Map((ex?.turns ?? []).map((t) => [`${item.id}${turnSep}${t.turn}`, t]));
        item.children.forEach((t) => {
          const to = byTurn.get(t.id);
          if (to !== undefined) {
            applyOutcome(run, t, to);
          } else {
            run.skipped(t);
          }
          const flaky = flakyText(turnResults.get(t.id));
          if (flaky !== undefined) {
            this.flaky.set(t.id, flaky);
            t.description = this.describe(t.id, flaky);
          } else {
            this.flaky.delete(t.id);
          }
        });
        this.noteUsage(run, item, ex);
        // "flaky 3/5" until a later run of the item says otherwise.
        const flaky = flakyText(report?.examples?.find((e) => e.id === item.label));
        if (flaky !== undefined) {
          this.flaky.set(item.id, flaky);
          item.description = this.describe(item.id, flaky);
        } else if (this.flaky.delete(item.id)) {
          void this.refresh(item.uri ?? file.uri ?? vscode.Uri.parse(res.uri));
        }
      }
    });
    if (report !== undefined) {
      run.appendOutput(`${vscode.workspace.asRelativePath(file.uri ?? res.uri)}: ${summaryLine(report)}\r\n`);
      const regrade = regradeLine(report);
      if (regrade !== undefined) {
        run.appendOutput(`${regrade}\r\n`);
      }
      for (const line of toolLines(report)) {
        run.appendOutput(`${line}\r\n`);
      }
      if (report.runId !== undefined) {
        run.appendOutput(`journal: run ${report.runId} (kmx: Show Run Replay)\r\n`);
      }
    }
    this.lastReports.set(res.uri, res);
    if (report?.runId !== undefined) {
      this.settingsRevisions.set(file.id, report.agent.settingsRevision ?? "");
    }
    this.reportEmitter.fire(res);
  }

  /**
   * Shows an example's token usage, and each turn's, as the route reported
   * it: a line of the run's output attached to the item (its output in
   * the Test Results view), and "98 tokens" in the item's description
   * until a later run says otherwise. Nothing when no usage was reported:
   * absent, never "0 tokens".
   */
  private noteUsage(run: vscode.TestRun, item: vscode.TestItem, ex: ExampleResult | undefined): void {
    const marks = new Map<string, string | undefined>([[item.id, usageMark(ex?.usage, ex?.judgeUsage)]]);
    for (const t of ex?.turns ?? []) {
      marks.set(`${item.id}${turnSep}${t.turn}`, usageMark(t.usage));
    }
    for (const line of ex !== undefined ? usageLines(ex) : []) {
      const target = line.turn !== undefined ? (item.children.get(`${item.id}${turnSep}${line.turn}`) ?? item) : item;
      run.appendOutput(`${line.text}\r\n`, undefined, target);
    }
    const items = [item];
    item.children.forEach((t) => items.push(t));
    for (const it of items) {
      const mark = marks.get(it.id);
      if (mark !== undefined) {
        this.usage.set(it.id, mark);
      } else {
        this.usage.delete(it.id);
      }
      it.description = this.describe(it.id);
    }
  }

  /**
   * Applies a run's capture: the sidecar's WorkspaceEdit that fills the
   * pending recordings a live call answered, as one edit, so Undo takes it
   * back. VS Code refuses it when the document changed since the run.
   */
  async applyCapture(res: ReportResult, run?: vscode.TestRun): Promise<void> {
    if (res.captureEdit === undefined || res.captureEdit === null) {
      return;
    }
    const edit = await this.sidecar.asWorkspaceEdit(res.captureEdit);
    const applied = await vscode.workspace.applyEdit(edit);
    const file = vscode.workspace.asRelativePath(vscode.Uri.parse(res.uri));
    const text = applied
      ? `kmx: captured the live result into the pending recording of ${file}; save to keep it, or Undo`
      : `kmx: the captured recording was not applied to ${file}: the file changed since the run started; run again`;
    run?.appendOutput(`${text}\r\n`);
    if (applied) {
      void vscode.window.showInformationMessage(text);
    } else {
      void vscode.window.showErrorMessage(text);
    }
  }

  dispose(): void {
    for (const t of this.timers.values()) {
      clearTimeout(t);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}

/**
 * Marks an item from a comparison's verdict: passed, failed, skipped for a
 * turn no model sent ("not run": the message goes to its output, since a
 * skip carries none), else errored (inconclusive, never passed).
 */
function markCompared(run: vscode.TestRun, item: vscode.TestItem, verdict: string, text: string): void {
  switch (verdict) {
    case Verdicts.Pass:
      run.passed(item);
      break;
    case Verdicts.Fail:
      run.failed(item, new vscode.TestMessage(text));
      break;
    case Verdicts.NotRun:
      run.skipped(item);
      run.appendOutput(`${text.replace(/\n/g, "\r\n")}\r\n`, undefined, item);
      break;
    default:
      run.errored(item, new vscode.TestMessage(text));
  }
}

/** How many trials the "Test file ×N" profile runs. */
const profileTrials = 5;

function childrenOf(item: vscode.TestItem): vscode.TestItem[] {
  const out: vscode.TestItem[] = [];
  item.children.forEach((c) => out.push(c));
  return out;
}

/** The contextValue of a failed or inconclusive example's messages. */
export const FailureMessageContext = "kmx.failure";

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function applyOutcome(run: vscode.TestRun, item: vscode.TestItem, o: Outcome): void {
  const messages = o.messages.map((m) => {
    // A diff only when both sides are known: "expected X, actual empty"
    // would claim the answer was empty.
    let msg: vscode.TestMessage;
    if (m.expected !== undefined && m.actual !== undefined) {
      msg = vscode.TestMessage.diff(m.text, m.expected, m.actual);
    } else {
      const extra = m.expected !== undefined ? `\nexpected: ${m.expected}` : m.actual !== undefined ? `\nactual: ${m.actual}` : "";
      msg = new vscode.TestMessage(m.text + extra);
    }
    if (m.range !== undefined && item.uri !== undefined) {
      msg.location = new vscode.Location(item.uri, toRange(m.range));
    }
    // Offers "Explain Last Test Failure" in the failure peek, where people
    // look at a failure (package.json: testing/message/context).
    msg.contextValue = FailureMessageContext;
    return msg;
  });
  switch (o.kind) {
    case "passed":
      run.passed(item, o.durationMs);
      break;
    case "failed":
      run.failed(item, messages, o.durationMs);
      break;
    case "errored":
      run.errored(item, messages, o.durationMs);
      break;
    case "skipped":
      // Not run (a turn after one that did not pass): skipped, with the
      // reason in the item's output since a skip carries no message.
      run.skipped(item);
      for (const m of o.messages) {
        run.appendOutput(`${m.text}\r\n`, undefined, item);
      }
      break;
  }
}

const examplesSuffix = ".agent.examples.yaml";

/** Whether two file URIs are in the same folder. */
function sameFolder(a: vscode.Uri, b: vscode.Uri): boolean {
  return vscode.Uri.joinPath(a, "..").toString() === vscode.Uri.joinPath(b, "..").toString();
}

/** Whether uri is a sibling examples file (NAME.agent.examples.yaml). */
export function isExamplesFile(uri: vscode.Uri): boolean {
  return uri.path.endsWith(examplesSuffix) && !uri.path.endsWith(`/${examplesSuffix}`);
}

/** The agent file a URI belongs to: itself, or NAME.agent.md for its examples file. */
export function agentUri(uri: vscode.Uri): vscode.Uri {
  return isExamplesFile(uri) ? uri.with({ path: uri.path.slice(0, -examplesSuffix.length) + ".agent.md" }) : uri;
}
