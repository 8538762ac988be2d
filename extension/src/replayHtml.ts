// The replay panel's HTML, built from the server's kmx.journal.inspect/v2
// inspection. Every value is escaped; the page has no script, loads nothing, and
// its only style is inline under a nonce, coloured by VS Code's theme
// variables; its one link is a command URI the panel allows (compare). Pure,
// so escaping and the CSP are unit-tested.
import {
  type AssertionResult,
  type ExampleResult,
  type InspectedExample,
  type InspectedFileChange,
  type InspectedToolCall,
  type InspectedTurn,
  type InspectedWorkspace,
  type Inspection,
  type JudgeSample,
  type ModelIdentity,
  type Report,
  type TokenUsage,
  Verdicts,
} from "./protocol";

export const InspectSchema = "kmx.journal.inspect/v2";
export const ReplayLabel = "local preview journal replay; not a test result";

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A command URI with one argument, as a webview link runs it (only for commands the panel's enableCommandUris lists). */
export function commandUri(command: string, arg: unknown): string {
  return `command:${command}?${encodeURIComponent(JSON.stringify([arg]))}`;
}

/** A CSP that allows nothing but the nonce'd inline style. */
export function contentSecurityPolicy(nonce: string, cspSource: string): string {
  return `default-src 'none'; style-src 'nonce-${nonce}'; img-src ${cspSource}; font-src ${cspSource}; script-src 'none'; frame-src 'none'; form-action 'none'`;
}

function identity(m: ModelIdentity | undefined): string {
  return m === undefined ? "?" : `${m.route} / ${m.model}`;
}

function field(label: string, valueHtml: string): string {
  return `<div class="field"><span class="label">${escapeHtml(label)}</span> ${valueHtml}</div>`;
}

function pre(s: string): string {
  return `<pre>${escapeHtml(s)}</pre>`;
}

/** A verdict as a coloured word ("inconclusive (unknown)" for unknown). */
function verdictWord(v: string): string {
  const word = v === Verdicts.Unknown ? "inconclusive (unknown)" : v;
  return `<span class="verdict v-${escapeHtml(v.replace(/ /g, "-"))}">${escapeHtml(word)}</span>`;
}

function assertionsHtml(assertions: readonly AssertionResult[] | undefined): string {
  const rows = (assertions ?? []).map((a) => {
    const extra = [a.expected !== undefined ? `expected ${a.expected}` : "", a.actual !== undefined ? `actual ${a.actual}` : ""].filter((x) => x !== "").join("; ");
    return `<li><code>assertion ${a.index + 1} ${escapeHtml(a.type)}</code> ${escapeHtml(a.outcome)}: ${escapeHtml(a.message)}${extra !== "" ? ` <span class="muted">(${escapeHtml(extra)})</span>` : ""}</li>`;
  });
  return rows.length > 0 ? `<div class="field"><span class="label">assertion results</span><ul>${rows.join("")}</ul></div>` : "";
}

function verdictHtml(ex: ExampleResult | undefined): string {
  if (ex === undefined) {
    return field("verdict", `<span class="muted">not in this session's report for the run</span>`);
  }
  return field("verdict (from the run's report)", verdictWord(ex.verdict)) + assertionsHtml(ex.assertions);
}

/**
 * Token usage as the routes reported it: "178 (prompt 146, completion 32)";
 * "not reported" when the route reported none (never 0); a sum that left
 * turns out says how many.
 */
export function usageText(u: TokenUsage | undefined): string {
  if (u === undefined) {
    return "not reported";
  }
  const n = u.unreported ?? 0;
  const turns = `${n} turn${n === 1 ? "" : "s"}`;
  if (n > 0 && u.totalTokens === 0 && u.promptTokens === 0 && u.completionTokens === 0) {
    return `not reported (${turns})`;
  }
  return `${u.totalTokens} (prompt ${u.promptTokens}, completion ${u.completionTokens})${n > 0 ? `, ${turns} reported no usage` : ""}`;
}

/** The tokens fields: the agent's, then the judge's apart (only when it judged). */
function usageHtml(agent: TokenUsage | undefined, judge: TokenUsage | undefined, of = ""): string {
  const cls = (u: TokenUsage | undefined) => (u === undefined || (u.totalTokens === 0 && (u.unreported ?? 0) > 0) ? "muted usage" : "usage");
  let h = field(`${of}tokens`, `<span class="${cls(agent)}">${escapeHtml(usageText(agent))}</span>`);
  if (judge !== undefined) {
    h += field(`${of}judge tokens`, `<span class="${cls(judge)}">${escapeHtml(usageText(judge))}</span>`);
  }
  return h;
}

/** One changed file: its unified diff (fixture → final), or why there is none. */
function fileChangeHtml(c: InspectedFileChange): string {
  let h = `<div class="file" data-path="${escapeHtml(c.path)}"><code>${escapeHtml(c.path)}</code> <span class="kind k-${escapeHtml(c.kind)}">${escapeHtml(c.kind)}</span>`;
  if (c.diff !== undefined && c.diff !== "") {
    const lines = c.diff.replace(/\n$/, "").split("\n").map((l) => {
      const op = l.startsWith("@@") ? "hunk" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("\\") ? "note" : "same";
      return `<span class="line op-${op}">${escapeHtml(l)}</span>`;
    });
    h += `<pre class="diff">${lines.join("\n")}</pre>`;
  } else {
    const hashes = [c.beforeHash !== undefined ? `before <code>${escapeHtml(c.beforeHash)}</code> (${c.beforeSize ?? 0} bytes)` : "", c.hash !== undefined ? `after <code>${escapeHtml(c.hash)}</code> (${c.size} bytes)` : ""].filter((x) => x !== "").join(" · ");
    h += `<div class="note${c.hashOnly === true ? " hash-only" : ""}">${escapeHtml(c.note ?? "no diff")}${hashes !== "" ? `<div class="muted">${hashes}</div>` : ""}</div>`;
  }
  return `${h}</div>`;
}

/** A workspace turn's fixture and the diff of each file it changed, from the journal alone. */
function workspaceHtml(w: InspectedWorkspace | undefined): string {
  if (w === undefined) {
    return "";
  }
  // The fixture's hash, shortened as git shortens a commit (the whole one in its title).
  const hash = w.hash !== undefined ? ` <span class="muted" title="${escapeHtml(w.hash)}">fixture ${escapeHtml(w.hash.replace(/^(sha256:[0-9a-f]{12})[0-9a-f]+$/, "$1…"))}</span>` : "";
  let h = field("workspace", `<code>${escapeHtml(w.fixture)}</code>${hash}`);
  if (!w.outcome) {
    return h + field("files changed", `<span class="muted">not shown: the turn did not replay verified, so its journaled outcome is not read</span>`);
  }
  const changes = w.changes ?? [];
  if (changes.length === 0) {
    return h + field("files changed", `<span class="muted">none</span>`);
  }
  h += `<div class="field workspace-diff"><span class="label">files changed</span> ${changes.length} <span class="muted">(fixture → after the turn, from the journal)</span>${changes.map(fileChangeHtml).join("")}</div>`;
  return h;
}

function judgeSampleHtml(s: JudgeSample, i: number): string {
  let h = `<li>sample ${i + 1}: ${escapeHtml(identity(s.model))}, ${escapeHtml(s.state)}, reply ${escapeHtml(s.reply)}${s.score !== undefined ? `, score ${s.score}` : ""}`;
  if (s.reason !== undefined) {
    h += ` <span class="muted">${escapeHtml(s.reason)}</span>`;
  }
  if (s.rubric !== undefined) {
    h += `<div class="muted">rubric: ${escapeHtml(s.rubric)}</div>`;
  }
  // Reasoning is long and rarely what one looks for first: folded.
  if (s.reasoning !== undefined) {
    h += `<details><summary>reasoning</summary>${pre(s.reasoning)}</details>`;
  }
  return `${h}</li>`;
}

/** The source of a stubbed call: what the model got, and how to give it a real result (said once per panel, below). */
const stubSource = "unavailable";

function toolCallHtml(c: InspectedToolCall): string {
  // The tool as the agent file names it, then the function the model called.
  const name = c.tool !== undefined ? `<code>${escapeHtml(c.tool)}</code> <span class="muted">as <code>${escapeHtml(c.name)}</code></span>` : `<code>${escapeHtml(c.name)}</code>`;
  let h = `<li${c.source === stubSource ? ` class="stubbed"` : ""}>${name} call ${c.index} <span class="muted">(${escapeHtml(c.id)})</span>, `;
  h += c.source !== undefined ? `source <code>${escapeHtml(c.source)}</code>` : `<span class="muted">no result journaled</span>`;
  if (c.source === stubSource) {
    h += ` <span class="stub">stub: not available in this test</span>`;
  }
  h += `<div class="muted">arguments</div>${pre(c.arguments)}`;
  if (c.result !== undefined) {
    h += `<div class="muted">result</div>${pre(c.result)}`;
  }
  return `${h}</li>`;
}

/** A tool turn's offered tools and journaled calls; "" on the chat harness. */
function toolsHtml(t: InspectedTurn): string {
  const tools = t.tools ?? [];
  if (tools.length === 0) {
    return "";
  }
  const offered = tools.map((o) => `<code>${escapeHtml(o.name)}</code>${o.function !== undefined ? ` <span class="muted">as ${escapeHtml(o.function)}</span>` : ""} ${escapeHtml(o.state)} (${escapeHtml(o.source)})`).join(", ");
  let h = field("tools offered", offered);
  const calls = t.toolCalls ?? [];
  h += calls.length === 0
    ? field("tool calls", `<span class="muted">none</span>`)
    : `<div class="field"><span class="label">tool calls</span><ul>${calls.map(toolCallHtml).join("")}</ul></div>`;
  return h;
}

/**
 * Names, once for the panel, the tools whose calls answered "not available
 * in this test" and how to give them real results; "" when none did.
 */
export function stubbedHtml(turns: readonly InspectedTurn[]): string {
  const names: string[] = [];
  for (const t of turns) {
    for (const c of t.toolCalls ?? []) {
      const name = c.tool ?? c.name;
      if (c.source === stubSource && !names.includes(name)) {
        names.push(name);
      }
    }
  }
  if (names.length === 0) {
    return "";
  }
  return `<div class="stubbed-note"><strong>Stubbed:</strong> ${names.map((n) => `<code>${escapeHtml(n)}</code>`).join(", ")} answered “This tool is not available in this test.” ` +
    `<span class="muted">Next: give each a real result with a recording in its example (<code>tools: {NAME: {recorded: {calls: [...]}}}</code>).</span></div>`;
}

/**
 * A turn's verdict: the one the run recorded (the journal's result), with
 * this session's assertion results for it when it has the run's report;
 * without a recorded verdict, the report's, labelled as such.
 */
function turnVerdictHtml(t: InspectedTurn, report: Report | undefined): string {
  const id = t.exampleId ?? t.example;
  const ex = report !== undefined && id !== "" ? (report.examples ?? []).find((e) => e.id === id && e.adHoc !== true) : undefined;
  if (t.verdict === undefined || t.verdict === "") {
    return report !== undefined && t.example !== "" ? verdictHtml(ex) : "";
  }
  let h = field("verdict (recorded by the run)", `${verdictWord(t.verdict)}${t.verdictMessage !== undefined ? ` <span class="muted">${escapeHtml(t.verdictMessage)}</span>` : ""}`);
  const assertions = t.scriptTurn !== undefined && t.scriptTurn > 0 ? ex?.turns?.find((x) => x.turn === t.scriptTurn)?.assertions : ex?.assertions;
  h += assertionsHtml(assertions);
  return h;
}

function turnHtml(t: InspectedTurn, report: Report | undefined, ofScript?: number): string {
  const heading =
    ofScript !== undefined && t.scriptTurn !== undefined
      ? `<h3>turn ${t.scriptTurn} of ${ofScript} <span class="muted">${escapeHtml(t.purpose)}</span></h3>`
      : `<h2>${escapeHtml(t.example !== "" ? t.example : "(ad-hoc input)")} <span class="muted">turn ${t.turn}, ${escapeHtml(t.purpose)}</span></h2>`;
  let h = `<section class="turn${ofScript !== undefined ? " script-turn" : ""}" data-session="${escapeHtml(t.sessionId)}">${heading}`;
  if (t.instructions !== undefined) {
    // What the turn sent as its instructions: collapsed, it is the agent's body.
    h += `<details class="instructions"><summary>instructions sent (${t.instructionsBytes ?? 0} bytes, ${t.instructionsLines ?? 0} lines)</summary>${pre(t.instructions)}</details>`;
  }
  h += field("input", pre(t.input));
  h += field("model", `<code>${escapeHtml(identity(t.model))}</code>`);
  h += field("replay", `<span class="state s-${escapeHtml(t.state)}">${escapeHtml(t.state)}</span>${t.reason !== undefined ? ` <span class="muted">${escapeHtml(t.reason)}</span>` : ""}`);
  if (t.error !== undefined) {
    h += field("error", escapeHtml(t.error));
  }
  h += toolsHtml(t);
  h += workspaceHtml(t.workspace);
  h += field("answer", t.answer !== undefined ? pre(t.answer) : `<span class="muted">no replay-verified answer</span>`);
  const samples = t.judgeSamples ?? [];
  if (samples.length > 0) {
    h += `<div class="field"><span class="label">judge samples</span><ul>${samples.map(judgeSampleHtml).join("")}</ul></div>`;
  }
  if (t.state === "verified") {
    if (t.durationMs !== undefined) {
      h += field("duration", `${t.durationMs.toFixed(1)} ms`);
    }
    h += usageHtml(t.usage, t.judgeUsage);
  }
  h += turnVerdictHtml(t, report);
  return `${h}</section>`;
}

/**
 * One example of the run: a one-turn example is its turn; a multi-turn
 * example a section with its recorded verdict and usage, then each turn in
 * script order and the turns never sent.
 */
function exampleHtml(ex: InspectedExample, turns: readonly InspectedTurn[], report: Report | undefined): string {
  const own = (ex.turns ?? []).map((i) => turns[i]).filter((t): t is InspectedTurn => t !== undefined);
  if (ex.multiTurn !== true) {
    return own.map((t) => turnHtml(t, report)).join("");
  }
  const notRun = ex.notRun ?? [];
  const total = own.length + notRun.length;
  let h = `<section class="example multi-turn" data-example="${escapeHtml(ex.id)}"><h2>${escapeHtml(ex.id)}${ex.trial !== undefined ? ` <span class="muted">trial ${ex.trial}</span>` : ""} <span class="muted">multi-turn, ${total} turn${total === 1 ? "" : "s"}</span></h2>`;
  if (ex.verdict !== undefined && ex.verdict !== "") {
    h += field("verdict (recorded by the run)", `${verdictWord(ex.verdict)}${ex.message !== undefined ? ` <span class="muted">${escapeHtml(ex.message)}</span>` : ""}`);
  }
  h += usageHtml(ex.usage, ex.judgeUsage, "example ");
  h += own.map((t) => turnHtml(t, report, total)).join("");
  for (const n of notRun) {
    h += `<section class="turn script-turn not-run"><h3>turn ${n.turn} of ${total} <span class="muted">not run</span></h3>${field("verdict (recorded by the run)", `${verdictWord(n.verdict)}${n.message !== undefined ? ` <span class="muted">${escapeHtml(n.message)}</span>` : ""}`)}</section>`;
  }
  return `${h}</section>`;
}

/** Every turn: grouped by example when the server grouped them, then any turn no example holds (an ad-hoc input, a judge turn without its agent turn). */
function turnsHtml(inspection: Inspection, report: Report | undefined): string {
  const turns = inspection.turns ?? [];
  const examples = inspection.examples ?? [];
  const shown = new Set<number>();
  let h = "";
  for (const ex of examples) {
    h += exampleHtml(ex, turns, report);
    for (const i of ex.turns ?? []) {
      shown.add(i);
    }
  }
  turns.forEach((t, i) => {
    if (!shown.has(i)) {
      h += turnHtml(t, report);
    }
  });
  return h;
}

/** The style the replay and compare pages share (under the page's nonce). */
export const pageStyle = `body { color: var(--vscode-foreground); background: var(--vscode-editor-background); font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); padding: 0 1em; }
.banner { border-left: 3px solid var(--vscode-textLink-foreground); padding: .3em .8em; background: var(--vscode-textBlockQuote-background); }
.turn, .example { border-top: 1px solid var(--vscode-panel-border); padding: .5em 0; }
.label { color: var(--vscode-descriptionForeground); display: inline-block; min-width: 7em; }
.muted { color: var(--vscode-descriptionForeground); }
.error { color: var(--vscode-errorForeground); }
.stub { color: var(--vscode-editorWarning-foreground); }
.stubbed-note { border-left: 3px solid var(--vscode-editorWarning-foreground); padding: .3em .8em; }
pre { background: var(--vscode-textCodeBlock-background); padding: .4em; white-space: pre-wrap; word-break: break-word; font-family: var(--vscode-editor-font-family); }
code { font-family: var(--vscode-editor-font-family); }
.v-pass, .s-verified { color: var(--vscode-testing-iconPassed); }
.v-fail, .s-failed { color: var(--vscode-testing-iconFailed); }
.v-unknown, .v-refused, .v-not-run, .s-incomplete, .s-cancelled { color: var(--vscode-testing-iconErrored); }
.op-del { color: var(--vscode-gitDecoration-deletedResourceForeground); }
.op-add { color: var(--vscode-gitDecoration-addedResourceForeground); }
.op-hunk, .op-note { color: var(--vscode-descriptionForeground); }
.diff .line { display: inline; }
.file { margin: .4em 0 .4em 1em; }
.file .note { padding: .2em .4em; border-left: 3px solid var(--vscode-editorWarning-foreground); }
.file .note code { word-break: break-all; }
.script-turn { margin-left: 1em; }
.multi-turn > h2 { margin-bottom: .2em; }`;

/**
 * The page shell the replay and compare views share: the content security
 * policy, the title, the shared style plus the view's own rules, the label
 * banner and the body.
 */
export function journalPageHtml(title: string, label: string, body: string, nonce: string, cspSource: string, extraStyle = ""): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(nonce, cspSource))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(title)}</title>
<style nonce="${escapeHtml(nonce)}">
${pageStyle}${extraStyle}
</style>
</head>
<body>
<p class="banner" id="label">${escapeHtml(label)}</p>
${body}
</body>
</html>
`;
}

/**
 * The panel's whole page. `report` is this session's report for the same
 * run, when the extension has one: the inspection itself carries no
 * verdicts or assertion results, and the panel says where those come from.
 */
export function replayHtml(inspection: Inspection, nonce: string, cspSource: string, report?: Report, compareHref?: string, comparisonHref?: string): string {
  const run = inspection.run;
  const sameRun = report !== undefined && report.runId !== undefined && report.runId === run.runId ? report : undefined;
  let body: string;
  if (inspection.schema !== InspectSchema) {
    body = `<p class="error">kmx answered an inspection this panel cannot read (schema ${escapeHtml(inspection.schema)}, expected ${InspectSchema}): update the extension and the sidecar together.</p>`;
  } else {
    const s = inspection.summary;
    const live = inspection.liveCalls;
    body = `<p class="meta">run <code>${escapeHtml(run.runId)}</code> · ${escapeHtml(run.command)} of <code>${escapeHtml(run.agentId)}</code> · ${escapeHtml(run.status)} · ${s.verified} of ${s.turns} turns verified · live model calls during replay: ${live}</p>`;
    if (compareHref !== undefined) {
      body += `<p><a id="compare" href="${escapeHtml(compareHref)}">Compare with previous run of this file</a></p>`;
    }
    const cmp = inspection.comparison;
    if (cmp !== undefined && comparisonHref !== undefined) {
      body += `<p><a id="comparison" href="${escapeHtml(comparisonHref)}">Open the compare view of this comparison (${cmp.columns} runs: grid, answers side by side, line diff)</a> <span class="muted">this run is column ${cmp.column} of ${cmp.columns}</span></p>`;
    }
    if (live !== 0) {
      body += `<p class="error">The replay attempted ${live} live model call(s); each was refused. This is a kmx bug: please report it.</p>`;
    }
    if (inspection.usage !== undefined) {
      body += `<p class="meta" id="usage">tokens: agent ${escapeHtml(usageText(inspection.usage.agent))}${inspection.usage.judge !== undefined ? ` · judge ${escapeHtml(usageText(inspection.usage.judge))}` : ""}</p>`;
    }
    body += stubbedHtml(inspection.turns ?? []);
    body += turnsHtml(inspection, sameRun);
  }
  return journalPageHtml("kmx replay", ReplayLabel, body, nonce, cspSource);
}
