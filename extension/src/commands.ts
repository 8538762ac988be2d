// Every kmx command, registered through one factory. Code lenses call the
// same ids with the server's argument ({uri, exampleId} or {uri}); the
// palette calls them with none, and the active editor fills it in.
import * as vscode from "vscode";
import type { ChatPanels } from "./chatPanel";
import type { ComparePanel } from "./comparePanel";
import type { ExplainView } from "./explainView";
import { modelChoices } from "./lmMapping";
import { type AddExamplesParams, Commands, type CompareModelsParams, EditorCommands, type ExampleParams, type ExamplesHome, Methods, type ReportResult, Verdicts } from "./protocol";
import type { ReplayPanel } from "./replayPanel";
import { regradeLine, runVerdictText, summaryLine } from "./results";
import { readSettings } from "./settings";
import type { Sidecar } from "./sidecar";
import type { ModelStatus } from "./statusBar";
import { errorText, isExamplesFile, type KmxTests } from "./testing";

export interface CommandDeps {
  sidecar: Sidecar;
  tests: KmxTests;
  explain: ExplainView;
  replay: ReplayPanel;
  status: ModelStatus;
  chat: ChatPanels;
  compare: ComparePanel;
}

type Handler = (arg?: unknown) => Promise<void>;

export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  const table: Record<string, Handler> = {
    [Commands.RunExample]: (arg) => runExample(deps, arg),
    [Commands.TestFile]: (arg) => testFile(deps, arg),
    // The server's Re-grade last run lens: {uri, fromRun} naming the run.
    [Commands.RegradeLastRun]: (arg) => regradeLastRun(deps, arg),
    // The replay panel's link ({runId}: that run and the one before it;
    // {runId, comparison: true}: the compare view of its comparison), the
    // comparison grid's link, and the palette (the active file's two
    // newest runs).
    [Commands.CompareRuns]: async (arg) => {
      const a = arg as { runId?: unknown; comparison?: unknown } | undefined;
      const runId = a?.runId;
      if (typeof runId === "string" && runId !== "") {
        // {runId, comparison: true}: the compare view of the comparison the run is a column of.
        await deps.replay.compare(a?.comparison === true ? { runId, comparison: true } : { runId });
        return;
      }
      const uri = fileArg(arg);
      if (uri !== undefined) {
        await deps.replay.compare({ uri: uri.toString() });
      }
    },
    [Commands.CompareModels]: (arg) => compareModels(deps, arg),
    [Commands.RunWithInput]: (arg) => runWithInput(deps, arg),
    [Commands.Explain]: async (arg) => {
      const uri = fileArg(arg);
      if (uri !== undefined) {
        await deps.explain.show(uri);
      }
    },
    [EditorCommands.ShowRunReplay]: async (arg) => {
      const uri = fileArg(arg);
      if (uri !== undefined) {
        await deps.replay.showLatest(uri);
      }
    },
    // The server's Replay last run lens: {runId} of the newest finished run.
    [Commands.InspectRun]: async (arg) => {
      const runId = (arg as { runId?: unknown } | undefined)?.runId;
      if (typeof runId !== "string" || runId === "") {
        throw new Error("kmx.inspectRun needs a run id: use kmx: Show Run Replay for the file's newest run");
      }
      await deps.replay.show(runId);
    },
    // The server's Open chat lens ({uri}) and the palette.
    [Commands.OpenChat]: (arg) => {
      const uri = fileArg(arg);
      if (uri !== undefined) {
        deps.chat.open(uri);
      }
      return Promise.resolve();
    },
    [Commands.ClearJournals]: () => clearJournals(deps),
    // The server's Add examples lens: {uri, homes}, each home with its edit.
    [EditorCommands.AddExamples]: (arg) => addExamples(deps, arg as AddExamplesParams | undefined),
    [EditorCommands.SelectModel]: () => selectModel(deps),
    [EditorCommands.SetEndpointCredential]: () => setEndpointCredential(deps),
    [EditorCommands.ShowLogs]: () => {
      deps.sidecar.log.show(true);
      return Promise.resolve();
    },
    [EditorCommands.RestartServer]: () => deps.sidecar.restart(),
  };
  return Object.entries(table).map(([id, handler]) =>
    vscode.commands.registerCommand(id, async (arg?: unknown) => {
      try {
        await handler(arg);
      } catch (err) {
        // A failed command says what failed; the sidecar's log has more.
        void vscode.window.showErrorMessage(`kmx: ${errorText(err)}`, "Show Logs").then((pick) => {
          if (pick === "Show Logs") {
            deps.sidecar.log.show(true);
          }
        });
      }
    }),
  );
}

/** Applies the skeleton of the home the user picks (the first, the recommended one, when there is one). */
async function addExamples(deps: CommandDeps, arg: AddExamplesParams | undefined): Promise<void> {
  const homes = arg?.homes ?? [];
  if (arg === undefined || homes.length === 0) {
    throw new Error("kmx.addExamples is the Add examples lens's command: click the lens above an agent file with no examples");
  }
  let home: ExamplesHome | undefined = homes[0];
  if (homes.length > 1) {
    const pick = await vscode.window.showQuickPick(
      homes.map((h, i) => ({ label: h.title, detail: h.detail, index: i })),
      { title: "kmx: Add Examples", placeHolder: "Where should the examples live?" },
    );
    if (pick === undefined) {
      return;
    }
    home = homes[pick.index];
  }
  if (home === undefined) {
    return;
  }
  const edit = await deps.sidecar.asWorkspaceEdit(home.edit);
  if (!(await vscode.workspace.applyEdit(edit))) {
    throw new Error(`the examples could not be added for ${vscode.workspace.asRelativePath(vscode.Uri.parse(arg.uri))}; the file may have changed or the examples file may exist already: try again`);
  }
  if (home.open !== undefined) {
    await vscode.window.showTextDocument(vscode.Uri.parse(home.open));
  }
}

/** The agent file a command is about: its argument's uri, else the active editor. */
function fileArg(arg: unknown): vscode.Uri | undefined {
  const uri = (arg as { uri?: unknown } | undefined)?.uri;
  if (typeof uri === "string") {
    return vscode.Uri.parse(uri);
  }
  if (uri instanceof vscode.Uri) {
    return uri;
  }
  // A button on a Test Explorer failure message: {test, message}; the
  // file is the test item's (or its parent's, for an example).
  const test = (arg as { test?: vscode.TestItem } | undefined)?.test;
  if (test?.uri !== undefined) {
    return test.uri;
  }
  const doc = vscode.window.activeTextEditor?.document;
  if (doc !== undefined && (doc.uri.path.endsWith(".agent.md") || isExamplesFile(doc.uri))) {
    return doc.uri;
  }
  void vscode.window.showErrorMessage("kmx: open an agent file (*.agent.md) first; this command works on the file in the active editor.");
  return undefined;
}

function withCancel<T>(title: string, work: (token: vscode.CancellationToken, report: (message: string) => void) => Promise<T>): Thenable<T> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (progress, token) =>
    work(token, (message) => progress.report({ message })),
  );
}

async function pickExample(deps: CommandDeps, uri: vscode.Uri): Promise<string | undefined> {
  const res = await deps.sidecar.request(Methods.Examples, { uri: uri.toString() });
  const examples = res.examples ?? [];
  const editor = vscode.window.activeTextEditor;
  if (editor !== undefined && editor.document.uri.toString() === uri.toString()) {
    const line = editor.selection.active.line;
    const here = examples.find((e) => e.fullRange.start.line <= line && line <= e.fullRange.end.line);
    if (here !== undefined) {
      return here.id;
    }
  }
  if (examples.length === 0) {
    void vscode.window.showErrorMessage(`kmx: ${vscode.workspace.asRelativePath(uri)} has no examples to run (state: ${res.state}); see the Problems panel.`);
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    examples.map((e) => ({ label: e.id, description: (e.assertions ?? []).map((a) => a.type).join(", ") })),
    { title: "kmx: Run Example", placeHolder: "Which example?" },
  );
  return pick?.label;
}

function showVerdict(text: string, ok: boolean, deps: CommandDeps): void {
  const shown = ok ? vscode.window.showInformationMessage(text, "Show Logs") : vscode.window.showWarningMessage(text, "Show Logs");
  void shown.then((pick) => {
    if (pick === "Show Logs") {
      deps.sidecar.log.show(true);
    }
  });
}

async function runExample(deps: CommandDeps, arg: unknown): Promise<void> {
  const uri = fileArg(arg);
  if (uri === undefined) {
    return;
  }
  const given = (arg as { exampleId?: unknown } | undefined)?.exampleId;
  const exampleId = typeof given === "string" ? given : await pickExample(deps, uri);
  if (exampleId === undefined) {
    return;
  }
  const params: ExampleParams = { uri: uri.toString(), exampleId };
  const res = await withCancel(`kmx: running example "${exampleId}"`, (token, report) =>
    deps.sidecar.request(Methods.Run, params, token, (v) => {
      if (v.message !== undefined) {
        report(v.message);
      }
    }),
  );
  // The lens result lands in the Test Explorer too, on the same item. Bring
  // the file's items up to date first: an examples file created a moment
  // ago may still be waiting for its debounced refresh, which would replace
  // the item the result was put on.
  await deps.tests.refresh(uri);
  const file = deps.tests.fileItem(uri);
  const item = deps.tests.exampleItem(uri, exampleId);
  if (item !== undefined) {
    const run = deps.tests.controller.createTestRun(new vscode.TestRunRequest([item]), `kmx: run ${exampleId}`, true);
    deps.tests.applyReport(run, file, res, [item]);
    await deps.tests.applyCapture(res, run);
    run.end();
  } else {
    noteReport(deps, res);
    await deps.tests.applyCapture(res);
  }
  const ex = res.report?.examples?.[0];
  showVerdict(res.report !== undefined ? runVerdictText(res.report) : "kmx: no report", ex?.verdict === Verdicts.Pass, deps);
}

function noteReport(deps: CommandDeps, res: ReportResult): void {
  deps.tests.lastReports.set(res.uri, res);
  deps.status.fromReport(res);
}

async function testFile(deps: CommandDeps, arg: unknown): Promise<void> {
  const uri = fileArg(arg);
  if (uri === undefined) {
    return;
  }
  const res = await withCancel(`kmx: testing ${vscode.workspace.asRelativePath(uri)}`, (token, report) => deps.tests.testFile(uri, token, report));
  if (res?.report !== undefined) {
    showVerdict(`kmx ${vscode.workspace.asRelativePath(uri)}: ${summaryLine(res.report)}`, res.report.verdict === Verdicts.Pass, deps);
  }
}

async function regradeLastRun(deps: CommandDeps, arg: unknown): Promise<void> {
  const fromRun = (arg as { fromRun?: unknown } | undefined)?.fromRun;
  if (typeof fromRun !== "string" || fromRun === "") {
    throw new Error("kmx.regradeLastRun needs the run to re-grade: use the Re-grade last run lens above ## Examples (it appears once a test of the file has finished)");
  }
  const uri = fileArg(arg);
  if (uri === undefined) {
    return;
  }
  const res = await withCancel(`kmx: re-grading run ${fromRun} (zero agent model calls)`, (token, report) => deps.tests.testFile(uri, token, report, fromRun));
  if (res?.report !== undefined) {
    const regrade = regradeLine(res.report);
    showVerdict(`kmx ${vscode.workspace.asRelativePath(uri)}: ${summaryLine(res.report)}${regrade !== undefined ? ` — ${regrade}` : ""}`, res.report.verdict === Verdicts.Pass, deps);
  }
}

async function runWithInput(deps: CommandDeps, arg: unknown): Promise<void> {
  const uri = fileArg(arg);
  if (uri === undefined) {
    return;
  }
  const input = await vscode.window.showInputBox({
    title: "kmx: Run With Input",
    prompt: "Input for the agent (at most 16 KiB; never a credential: kmx refuses credential-shaped input)",
    ignoreFocusOut: true,
  });
  if (input === undefined) {
    return;
  }
  const res = await withCancel("kmx: running with your input", (token, report) =>
    deps.sidecar.request(Methods.Run, { uri: uri.toString(), input }, token, (v) => {
      if (v.message !== undefined) {
        report(v.message);
      }
    }),
  );
  noteReport(deps, res);
  const ex = res.report?.examples?.[0];
  showVerdict(res.report !== undefined ? runVerdictText(res.report) : "kmx: no report", ex?.verdict === Verdicts.Answered, deps);
}

/**
 * Compare Models…: the file (or {uri, models, examples?, baseline?} from a
 * caller) on two or more models the user picks, each its own run; the
 * sidecar answers the grid, the comparison panel shows it and the Test
 * Explorer marks each example with its row.
 */
async function compareModels(deps: CommandDeps, arg: unknown): Promise<void> {
  const uri = fileArg(arg);
  if (uri === undefined) {
    return;
  }
  const given = arg as { models?: unknown; examples?: unknown; baseline?: unknown } | undefined;
  const strings = (v: unknown): string[] | undefined => (Array.isArray(v) && v.every((x) => typeof x === "string") ? (v as string[]) : undefined);
  const models = strings(given?.models) ?? (await pickModels());
  if (models === undefined) {
    return;
  }
  const params: CompareModelsParams = { uri: uri.toString(), models };
  const examples = strings(given?.examples);
  if (examples !== undefined) {
    params.examples = examples;
  }
  if (typeof given?.baseline === "string" && given.baseline !== "") {
    params.baseline = given.baseline;
  }
  await deps.tests.refresh(uri);
  const file = deps.tests.fileItem(uri);
  const items: vscode.TestItem[] = [];
  file.children.forEach((c) => {
    if (examples === undefined || examples.includes(c.label)) {
      items.push(c);
    }
  });
  const res = await withCancel(`kmx: comparing ${vscode.workspace.asRelativePath(uri)} on ${models.join(", ")}`, (token, report) =>
    deps.sidecar.request(Methods.CompareModels, params, token, (v) => {
      if (v.message !== undefined) {
        report(v.message);
      }
    }),
  );
  const run = deps.tests.controller.createTestRun(new vscode.TestRunRequest([file]), `kmx: compare ${models.join(", ")}`, true);
  deps.tests.applyComparison(run, items, res);
  run.end();
  deps.compare.show(res);
  const g = res.comparison;
  if (g === undefined) {
    void vscode.window.showWarningMessage(`kmx: the comparison was refused: ${res.refusal?.message ?? "no answer"}`);
    return;
  }
  const differ = (g.rows ?? []).filter((r) => r.differs === true).length;
  showVerdict(`kmx ${vscode.workspace.asRelativePath(uri)} on ${models.length} models: verdict ${g.verdict}; the models disagree on ${differ} example${differ === 1 ? "" : "s"} (local preview)`, g.verdict === Verdicts.Pass, deps);
}

/**
 * Two or more models to compare: every model VS Code offers and fake,
 * and, with an endpoint set, exact ids it serves. Undefined when the user
 * cancels.
 */
export async function pickModels(): Promise<string[] | undefined> {
  const offered = await vscode.lm.selectChatModels();
  const items: (vscode.QuickPickItem & { value: string | undefined })[] = modelChoices(offered, "").filter((c) => c.value !== "");
  if (readSettings().endpoint !== undefined) {
    items.push({ label: "Model ids the endpoint serves…", description: "", detail: "Exact model ids kmx.endpoint serves, typed next.", value: undefined });
  }
  for (;;) {
    const picks = await vscode.window.showQuickPick(items, { title: "kmx: Compare Models", placeHolder: "Pick two or more models; each runs the examples as its own run", canPickMany: true, matchOnDescription: true });
    if (picks === undefined) {
      return undefined;
    }
    const models = picks.filter((p) => p.value !== undefined).map((p) => p.value as string);
    if (picks.some((p) => p.value === undefined)) {
      const typed = await vscode.window.showInputBox({ title: "kmx: model ids", prompt: "Exact model ids kmx.endpoint serves, separated by commas" });
      if (typed === undefined) {
        return undefined;
      }
      models.push(...typed.split(",").map((m) => m.trim()).filter((m) => m !== "" && !models.includes(m)));
    }
    if (models.length >= 2) {
      return models;
    }
    const again = await vscode.window.showWarningMessage(`kmx: a comparison needs two or more models; ${models.length} picked.`, "Pick Again");
    if (again !== "Pick Again") {
      return undefined;
    }
  }
}

async function clearJournals(deps: CommandDeps): Promise<void> {
  const go = await vscode.window.showWarningMessage(
    "kmx: delete every retained run journal that is not executing? Runs still executing are kept.",
    { modal: true },
    "Clear Journals",
  );
  if (go !== "Clear Journals") {
    return;
  }
  const res = await deps.sidecar.request(Methods.ClearJournals, {});
  void vscode.window.showInformationMessage(`kmx: ${res.message}`);
}

async function selectModel(deps: CommandDeps): Promise<void> {
  const c = vscode.workspace.getConfiguration("kmx");
  const current = c.get<string>("model", "");
  // Every model VS Code offers (Copilot or any installed provider), then
  // fake; with an endpoint set, any exact id the endpoint serves too.
  const models = await vscode.lm.selectChatModels();
  const items: (vscode.QuickPickItem & { value: string | undefined })[] = modelChoices(models, current);
  if (readSettings().endpoint !== undefined) {
    items.push({ label: "Another model id…", description: "", detail: "An exact model id kmx.endpoint serves.", value: undefined });
  }
  const pick = await vscode.window.showQuickPick(items, {
    title: "kmx: Select Model",
    placeHolder: `current: ${current === "" ? "each file's model" : current}`,
    matchOnDescription: true,
  });
  if (pick === undefined) {
    return;
  }
  let value = pick.value;
  if (value === undefined) {
    value = await vscode.window.showInputBox({ title: "kmx: model id", value: current, prompt: "The exact model id the endpoint serves" });
    if (value === undefined) {
      return;
    }
  }
  const target = vscode.workspace.workspaceFolders !== undefined ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await c.update("model", value.trim() === "" ? undefined : value.trim(), target);
  deps.status.settingsChanged();
}

async function setEndpointCredential(deps: CommandDeps): Promise<void> {
  const value = await vscode.window.showInputBox({
    title: "kmx: Set Endpoint Credential",
    prompt: "The bearer credential of kmx.endpoint, kept in VS Code's secret storage (the OS keychain) and handed to kmx in memory. Leave empty to delete it.",
    password: true,
    ignoreFocusOut: true,
  });
  if (value === undefined) {
    return;
  }
  await deps.sidecar.setCredential(value.trim());
  // Never the value: only whether one is stored.
  void vscode.window.showInformationMessage(
    value.trim() === "" ? "kmx: the endpoint credential was deleted." : "kmx: the endpoint credential is stored in VS Code's secret storage; kmx uses it for kmx.endpoint.",
  );
}
