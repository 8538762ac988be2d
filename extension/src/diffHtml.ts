// The comparison page of the replay panel, built from the server's
// kmx.journal.diff/v2 (kmx/diffRuns): the sidecar picked the two runs,
// replayed both with zero model calls and diffed them; this only renders.
// Every value is escaped; no script; the one link is a command URI the
// panel allows (back to the replay).
import type { ComparisonCell, ComparisonColumn, ComparisonDiff, ComparisonRow, DiffLine, DiffRun, DiffSide, DiffTurn, ExampleDiff, RunDiff } from "./protocol";
import { escapeHtml, journalPageHtml } from "./replayHtml";

export const DiffSchema = "kmx.journal.diff/v2";
export const ComparisonSchema = "kmx.journal.comparison/v2";
export const DiffLabel = "local preview journal comparison; not a test result";

function runHtml(name: string, r: DiffRun, other: DiffRun): string {
  const parts = [`${escapeHtml(r.command)} of <code>${escapeHtml(r.agentId)}</code>`, escapeHtml(r.status), escapeHtml(r.created)];
  if (r.trials !== undefined && r.trials > 1) {
    parts.push(`${r.trials} trials per example`);
  }
  parts.push(r.verdicts ? "verdicts recorded" : `<span class="muted">no recorded verdicts: answers only</span>`);
  let h = `<div class="field"><span class="label">run ${name}</span> <code>${escapeHtml(r.runId)}</code> · ${parts.join(" · ")}`;
  if (r.sourceRun !== undefined && r.sourceRun !== "") {
    h += ` · <span class="regrade">re-grade of ${r.sourceRun === other.runId ? `run ${name === "A" ? "B" : "A"}` : `<code>${escapeHtml(r.sourceRun)}</code>`}</span>`;
  }
  return `${h}</div>`;
}

function verdictWord(v: string | undefined): string {
  if (v === undefined || v === "") {
    return `<span class="muted">—</span>`;
  }
  return `<span class="verdict v-${escapeHtml(v)}">${escapeHtml(v === "unknown" ? "inconclusive (unknown)" : v)}</span>`;
}

function turnRows(name: string, side: DiffSide | undefined): string {
  const turns: DiffTurn[] = side?.turns ?? [];
  if (turns.length === 0) {
    return `<tr><td>${name}</td><td colspan="4" class="muted">not in this run</td></tr>`;
  }
  return turns
    .map((t, i) => {
      const label = turns.length > 1 ? `${name}#${i + 1}` : name;
      const model = t.model.route === "" && t.model.model === "" ? `<span class="muted">—</span>` : `<code>${escapeHtml(`${t.model.route} / ${t.model.model}`)}</code>`;
      const dur = t.durationMs !== undefined ? `${t.durationMs.toFixed(1)} ms` : `<span class="muted">—</span>`;
      return `<tr class="side-${name.toLowerCase()}"><td>${escapeHtml(label)}</td><td>${verdictWord(t.verdict)}</td><td>${model}</td><td><span class="state s-${escapeHtml(t.state)}">${escapeHtml(t.state)}</span></td><td>${dur}</td></tr>`;
    })
    .join("");
}

function answerOf(side: DiffSide | undefined): string | undefined {
  return (side?.turns ?? []).find((t) => t.answer !== undefined)?.answer;
}

/** A line diff (op "=", "-" or "+") as the compare pages show it, escaped. */
function linesHtml(lines: readonly DiffLine[]): string {
  const body = lines.map((l) => `<span class="line op-${l.op === "-" ? "del" : l.op === "+" ? "add" : "same"}">${escapeHtml(`${l.op === "=" ? " " : l.op} ${l.text}`)}</span>`).join("\n");
  return `<pre class="diff">${body}</pre>`;
}

function exampleHtml(ex: ExampleDiff): string {
  let h = `<section class="example" data-example="${escapeHtml(ex.id)}" data-status="${escapeHtml(ex.status)}"><h2>${escapeHtml(ex.id)} <span class="status st-${escapeHtml(ex.status)}">${escapeHtml(ex.status)}</span></h2>`;
  h += `<table><thead><tr><th>run</th><th>verdict</th><th>model</th><th>replay</th><th>duration</th></tr></thead><tbody>${turnRows("A", ex.a)}${turnRows("B", ex.b)}</tbody></table>`;
  const lines = ex.lines ?? [];
  if (lines.length > 0) {
    h += `<div class="field"><span class="label">answers (A → B)</span></div>${linesHtml(lines)}`;
  } else {
    const a = answerOf(ex.a);
    const b = answerOf(ex.b);
    if (a !== undefined && b !== undefined) {
      h += `<div class="field"><span class="label">answers</span> <span class="muted">identical</span></div><pre>${escapeHtml(a)}</pre>`;
    } else if (a !== undefined || b !== undefined) {
      h += `<div class="field"><span class="label">answer (${a !== undefined ? "A" : "B"} only)</span></div><pre>${escapeHtml(a ?? b ?? "")}</pre>`;
    }
  }
  return `${h}</section>`;
}

/** The comparison page. `backHref` is a command URI reopening run B's replay. */
export function diffHtml(diff: RunDiff, nonce: string, cspSource: string, backHref?: string): string {
  let body: string;
  if (diff.schema !== DiffSchema) {
    body = `<p class="error">kmx answered a comparison this panel cannot read (schema ${escapeHtml(diff.schema)}, expected ${DiffSchema}): update the extension and the sidecar together.</p>`;
  } else {
    const s = diff.summary;
    body = runHtml("A", diff.a, diff.b) + runHtml("B", diff.b, diff.a);
    body += `<p class="meta" id="summary">${s.same} same · ${s.changed} changed · ${s.onlyA} only in A · ${s.onlyB} only in B · live model calls while comparing: ${diff.liveCalls}</p>`;
    if (diff.liveCalls !== 0) {
      body += `<p class="error">The comparison attempted ${diff.liveCalls} live model call(s); each was refused. This is a kmx bug: please report it.</p>`;
    }
    if (backHref !== undefined) {
      body += `<p><a id="back" href="${escapeHtml(backHref)}">Back to the replay of run B</a></p>`;
    }
    body += (diff.examples ?? []).map(exampleHtml).join("");
  }
  return journalPageHtml("kmx compare", diff.label, body, nonce, cspSource, `
table { border-collapse: collapse; margin: .3em 0; }
th, td { text-align: left; padding: .15em .8em .15em 0; }
th { color: var(--vscode-descriptionForeground); font-weight: normal; }
.st-changed, .st-only-a, .st-only-b { color: var(--vscode-editorWarning-foreground); }
.st-same { color: var(--vscode-descriptionForeground); }`);
}

/** A comparison column's name: "MODEL (route)", then its baseline's revision. */
export function comparisonColumnName(c: ComparisonColumn): string {
  const model = c.model.model === "" && c.model.route === "" ? `run ${c.runId}` : `${c.model.model} (${c.model.route})`;
  if (c.baseline === undefined) {
    return model;
  }
  const commit = c.baseline.commit !== undefined && c.baseline.commit !== "" && c.baseline.rev !== "none" ? c.baseline.commit.slice(0, 12) : "";
  return `${model} · baseline ${c.baseline.rev}${commit !== "" && commit !== c.baseline.rev ? ` (${commit})` : ""}`;
}

/** A cell's word: PASS, FAIL, UNKNOWN, MISSING, FLAKY k/N, PASS N/N over trials, or — when the run recorded none. */
export function comparisonCellWord(c: ComparisonCell): string {
  const v = c.verdict ?? "";
  if (v === "") {
    return "—";
  }
  if (c.trials !== undefined && c.trials > 1) {
    return `${v === "flaky" ? "FLAKY" : v.toUpperCase()} ${c.pass ?? 0}/${c.trials}`;
  }
  return v.toUpperCase();
}

function comparisonCellHtml(c: ComparisonCell): string {
  const v = c.verdict ?? "";
  return `<td class="cell v-${escapeHtml(v === "" ? "none" : v)}"><span class="verdict v-${escapeHtml(v)}">${escapeHtml(comparisonCellWord(c))}</span></td>`;
}

function comparisonRowHtml(r: ComparisonRow): string {
  const mark = r.differs ? ` <span class="mark" title="the columns disagree on this example">≠</span>` : "";
  return `<tr data-example="${escapeHtml(r.id)}"${r.differs ? ` class="differs"` : ""}><th scope="row"><a href="#ex-${escapeHtml(encodeURIComponent(r.id))}"><code>${escapeHtml(r.id)}</code></a>${mark}</th>${(r.cells ?? []).map(comparisonCellHtml).join("")}</tr>`;
}

/** One column's answers of an example: each turn's (a multi-turn script's or a trial's), numbered when more than one. */
function sideAnswersHtml(side: DiffSide | undefined): string {
  if (side === undefined) {
    return `<span class="muted">not in this run</span>`;
  }
  const turns = side.turns ?? [];
  if (turns.length === 0) {
    return `<span class="muted">no turn</span>`;
  }
  return turns
    .map((t, i) => {
      const label = turns.length > 1 ? `<div class="muted">#${i + 1}${t.verdict !== undefined && t.verdict !== "" ? ` · ${escapeHtml(t.verdict)}` : ""}</div>` : "";
      return `${label}${t.answer !== undefined ? `<pre>${escapeHtml(t.answer)}</pre>` : `<div class="muted">no replay-verified answer (${escapeHtml(t.state)})</div>`}`;
    })
    .join("");
}

function comparisonExampleHtml(r: ComparisonRow, cols: readonly ComparisonColumn[]): string {
  const cells = r.cells ?? [];
  const status = r.differs ? "verdicts differ" : r.answersDiffer === true ? "answers differ" : "same";
  let h = `<section class="example" id="ex-${escapeHtml(encodeURIComponent(r.id))}" data-example="${escapeHtml(r.id)}"><h2>${escapeHtml(r.id)} <span class="status ${status === "same" ? "st-same" : "st-changed"}">${status}</span></h2>`;
  h += `<table class="sides"><thead><tr>${cols.map((c, i) => `<th scope="col">${escapeHtml(comparisonColumnName(c))} <span class="verdict v-${escapeHtml(cells[i]?.verdict ?? "")}">${escapeHtml(cells[i] !== undefined ? comparisonCellWord(cells[i]) : "—")}</span></th>`).join("")}</tr></thead>`;
  h += `<tbody><tr>${cols.map((_c, i) => `<td>${sideAnswersHtml(cells[i]?.side)}</td>`).join("")}</tr></tbody></table>`;
  const first = cols[0] !== undefined ? comparisonColumnName(cols[0]) : "";
  cells.forEach((c, i) => {
    const lines = c.lines ?? [];
    if (i > 0 && lines.length > 0 && cols[i] !== undefined) {
      h += `<div class="field"><span class="label">line diff</span> ${escapeHtml(first)} → ${escapeHtml(comparisonColumnName(cols[i]))}</div>${linesHtml(lines)}`;
    }
  });
  return `${h}</section>`;
}

/**
 * The compare view of a comparison run (several models, or the current
 * file × its baseline), read back from the journals by the sidecar: the
 * grid of examples × columns with the recorded verdicts, then per example
 * the answers side by side and the line diff against the first column.
 * `replayHref` makes the command URI that opens a run's replay.
 */
export function comparisonHtml(cd: ComparisonDiff, nonce: string, cspSource: string, replayHref: (runId: string) => string): string {
  let body: string;
  if (cd.schema !== ComparisonSchema || cd.grid === undefined) {
    body = `<p class="error">kmx answered a comparison this panel cannot read (schema ${escapeHtml(cd.schema)}, expected ${ComparisonSchema} with a grid): update the extension and the sidecar together.</p>`;
  } else {
    const g = cd.grid;
    const cols = g.columns ?? [];
    const rows = g.rows ?? [];
    const kept = (cd.runs ?? []).filter((r) => r !== "").length;
    body = `<p class="meta" id="summary">comparison <code>${escapeHtml(cd.id)}</code> · ${rows.length} example${rows.length === 1 ? "" : "s"} × ${cols.length} run${cols.length === 1 ? "" : "s"}${kept < cd.columns ? ` (${kept} of ${cd.columns} still retained)` : ""} · live model calls while comparing: ${cd.liveCalls}</p>`;
    if (cd.liveCalls !== 0) {
      body += `<p class="error">The comparison attempted ${cd.liveCalls} live model call(s); each was refused. This is a kmx bug: please report it.</p>`;
    }
    const answers = g.answersDiffer === 0 ? "the answers are the same on every example" : `the answers differ on ${g.answersDiffer} example${g.answersDiffer === 1 ? "" : "s"} (line diffs below)`;
    body += `<p class="meta" id="differs">${g.differ === 0 ? "The columns agree on every verdict" : `The columns disagree on ${g.differ} example${g.differ === 1 ? "" : "s"} (highlighted)`}; ${answers}.</p>`;
    const head = cols
      .map((c) => {
        const s = c.summary;
        return `<th scope="col"><a href="${escapeHtml(replayHref(c.runId))}" title="replay this run offline">${escapeHtml(comparisonColumnName(c))}</a><div class="muted">${s.pass} pass, ${s.fail} fail, ${s.unknown} unknown${s.other > 0 ? `, ${s.other} other` : ""}</div></th>`;
      })
      .join("");
    body += `<table id="grid"><thead><tr><th scope="col">example</th>${head}</tr></thead><tbody>${rows.map(comparisonRowHtml).join("")}</tbody></table>`;
    body += rows.map((r) => comparisonExampleHtml(r, cols)).join("");
  }
  return journalPageHtml("kmx compare", cd.label, body, nonce, cspSource, `
table { border-collapse: collapse; margin: .3em 0; }
th, td { text-align: left; padding: .2em .8em .2em .3em; vertical-align: top; }
thead th { color: var(--vscode-descriptionForeground); font-weight: normal; }
#grid td, #grid th { border-bottom: 1px solid var(--vscode-panel-border, transparent); }
#grid tr.differs { background: var(--vscode-editor-findMatchHighlightBackground, rgba(255, 200, 0, .18)); }
tr.differs th .mark { color: var(--vscode-editorWarning-foreground); font-weight: bold; }
table.sides { table-layout: fixed; width: 100%; }
table.sides td { width: auto; }
.v-flaky, .v-missing { color: var(--vscode-editorWarning-foreground); }
.st-changed { color: var(--vscode-editorWarning-foreground); }
.st-same { color: var(--vscode-descriptionForeground); }`);
}
