// The comparison panel's HTML, built from the server's kmx/compareModels
// answer (kmx.test.compare/v1): the sidecar ran each model and laid out the
// grid, its changes against a baseline and the rows where the models
// disagree (differs); this only renders them. Every value is escaped; no
// script; its links are command URIs of the replay of each column's run
// and of the compare view (the answers side by side).
// Pure, so escaping and the highlighting are unit-tested.
import type { CompareCell, CompareColumn, CompareModelsResult, CompareResult, CompareRow, CompareTurnCell } from "./protocol";
import { escapeHtml, journalPageHtml } from "./replayHtml";

export const CompareSchema = "kmx.test.compare/v1";

/** The column's name, as the CLI's table names it: "MODEL (route)", then its baseline. */
export function columnHeader(c: CompareColumn): string {
  const model = `${c.model.model} (${c.model.route})`;
  if (c.side !== "baseline") {
    return model;
  }
  const b = c.baseline;
  let rev = b?.rev ?? "";
  if (b?.commit !== undefined && b.commit !== "" && rev !== "none") {
    const short = b.commit.slice(0, 12);
    rev = short === rev ? short : `${rev} (${short})`;
  }
  return `${model} · baseline ${rev}`;
}

/** A cell's (or a turn's cell's) word: PASS, FAIL, UNKNOWN, REFUSED, MISSING, NOT RUN or, over trials, FLAKY k/N and PASS N/N. */
export function cellWord(c: CompareCell | CompareTurnCell): string {
  const t = c.trials;
  if (t !== undefined && t.n > 1) {
    if (t.flaky) {
      return `FLAKY ${t.pass}/${t.n}`;
    }
    return `${c.verdict.toUpperCase()} ${t.pass}/${t.n}`;
  }
  return c.verdict.toUpperCase();
}

function cellHtml(c: CompareCell | undefined, col: CompareColumn): string {
  if (c === undefined) {
    return `<td class="muted">—</td>`;
  }
  const flaky = c.trials?.flaky === true ? " flaky" : "";
  const dur = col.refusal === undefined && c.verdict !== "missing" ? ` <span class="muted">${c.durationMs.toFixed(1)} ms</span>` : "";
  const tokens = c.tokens !== undefined ? ` <span class="muted">${c.tokens} tokens</span>` : "";
  return `<td class="cell v-${escapeHtml(c.verdict)}${flaky}${col.side === "baseline" ? " baseline" : ""}"><span class="verdict v-${escapeHtml(c.verdict)}">${escapeHtml(cellWord(c))}</span>${dur}${tokens}</td>`;
}

function rowHtml(r: CompareRow, cols: CompareColumn[], withChanges: boolean): string {
  const cells = cols.map((col, i) => cellHtml(r.cells?.[i], col)).join("");
  let changes = "";
  if (withChanges) {
    const parts = (r.changes ?? []).map((ch) => {
      const who = cols.filter((c) => c.side !== "baseline").length > 1 ? `${escapeHtml(`${ch.model.model} (${ch.model.route})`)}: ` : "";
      return `<span class="change ch-${escapeHtml(ch.change)}">${who}${escapeHtml(ch.change)}</span>`;
    });
    changes = `<td>${parts.join("<br>")}</td>`;
  }
  const regressed = (r.changes ?? []).some((ch) => ch.change === "regressed");
  const cls = [r.differs === true ? "differs" : "", regressed ? "regressed" : ""].filter((x) => x !== "").join(" ");
  const mark = r.differs === true ? ` <span class="mark" title="the models disagree on this example">≠</span>` : "";
  return `<tr data-example="${escapeHtml(r.id)}"${cls !== "" ? ` class="${cls}"` : ""}><th scope="row"><code>${escapeHtml(r.id)}</code>${mark}</th>${cells}${changes}</tr>`;
}

function headerHtml(c: CompareColumn, replayHref: (runId: string) => string): string {
  const name = escapeHtml(columnHeader(c));
  let h = c.runId !== undefined && c.runId !== "" ? `<a href="${escapeHtml(replayHref(c.runId))}" title="replay this model's run offline">${name}</a>` : name;
  h += `<div class="muted">${escapeHtml(c.verdict)} · ${c.summary.pass} pass, ${c.summary.fail} fail, ${c.summary.unknown} unknown</div>`;
  return `<th scope="col" class="${c.side === "baseline" ? "baseline" : ""}">${h}</th>`;
}

function gridHtml(g: CompareResult, replayHref: (runId: string) => string, answersHref?: (runId: string) => string): string {
  const cols = g.columns ?? [];
  const rows = g.rows ?? [];
  const models = cols.filter((c) => c.side !== "baseline").length;
  const s = g.summary;
  const differ = rows.filter((r) => r.differs === true).length;
  let h = `<p class="meta" id="summary"><code>${escapeHtml(g.agent.path)}</code> · ${rows.length} example${rows.length === 1 ? "" : "s"} × ${models} model${models === 1 ? "" : "s"}: ${s.pass} pass, ${s.fail} fail, ${s.unknown} unknown${s.refused > 0 ? `, ${s.refused} refused` : ""} · verdict <span class="verdict v-${escapeHtml(g.verdict)}">${escapeHtml(g.verdict)}</span></p>`;
  if (models > 1) {
    h += `<p class="meta" id="differs">${differ === 0 ? "The models agree on every example." : `The models disagree on ${differ} example${differ === 1 ? "" : "s"} (highlighted).`}</p>`;
  }
  if (g.changes !== undefined) {
    const c = g.changes;
    h += `<p class="meta" id="changes">Against the baseline: <span class="ch-regressed">${c.regressed} regressed</span>, <span class="ch-improved">${c.improved} improved</span>, ${c.unchanged} unchanged.</p>`;
  }
  for (const c of cols) {
    if (c.refusal !== undefined) {
      h += `<p class="error">${escapeHtml(columnHeader(c))} was refused, nothing ran: ${escapeHtml(c.refusal.message)}${c.refusal.next !== undefined ? `; ${escapeHtml(c.refusal.next)}` : ""}</p>`;
    }
  }
  const withChanges = g.changes !== undefined;
  h += `<table id="grid"><thead><tr><th scope="col">example</th>${cols.map((c) => headerHtml(c, replayHref)).join("")}${withChanges ? `<th scope="col">change</th>` : ""}</tr></thead>`;
  h += `<tbody>${rows.map((r) => rowHtml(r, cols, withChanges)).join("")}</tbody></table>`;
  h += `<p class="muted">Each model is its own run and journal; a model's name opens its replay (no model calls).</p>`;
  const first = cols.find((c) => c.runId !== undefined && c.runId !== "");
  if (answersHref !== undefined && first?.runId !== undefined && cols.filter((c) => c.runId !== undefined && c.runId !== "").length > 1) {
    h += `<p><a id="answers" href="${escapeHtml(answersHref(first.runId))}">Answers side by side and their line diff (the compare view, read back from the journals)</a></p>`;
  }
  return h;
}

/** The comparison page. `replayHref` makes the command URI that opens a run's replay. */
export function compareHtml(res: CompareModelsResult, nonce: string, cspSource: string, replayHref: (runId: string) => string, answersHref?: (runId: string) => string): string {
  let body: string;
  let label = "local preview";
  if (res.refusal !== undefined) {
    body = `<p class="error" id="refusal">kmx refused the comparison: ${escapeHtml(res.refusal.message)}</p>`;
    if (res.refusal.next !== undefined) {
      body += `<p>Next: ${escapeHtml(res.refusal.next)}</p>`;
    }
  } else if (res.comparison === undefined) {
    body = `<p class="error">kmx answered no comparison.</p>`;
  } else if (res.comparison.schema !== CompareSchema) {
    body = `<p class="error">kmx answered a comparison this panel cannot read (schema ${escapeHtml(res.comparison.schema)}, expected ${CompareSchema}): update the extension and the sidecar together.</p>`;
  } else {
    label = `${res.comparison.label}: not deployment qualification`;
    body = gridHtml(res.comparison, replayHref, answersHref);
  }
  return journalPageHtml("kmx compare models", label, body, nonce, cspSource, `
table { border-collapse: collapse; margin: .5em 0; }
th, td { text-align: left; padding: .25em .9em .25em .4em; vertical-align: top; border-bottom: 1px solid var(--vscode-panel-border, transparent); }
thead th { color: var(--vscode-descriptionForeground); font-weight: normal; }
tr.differs { background: var(--vscode-editor-findMatchHighlightBackground, rgba(255, 200, 0, .18)); }
tr.differs th .mark { color: var(--vscode-editorWarning-foreground); font-weight: bold; }
tr.regressed { background: var(--vscode-diffEditor-removedLineBackground, rgba(255, 0, 0, .12)); }
td.baseline, th.baseline { opacity: .8; }
td.flaky .verdict { color: var(--vscode-editorWarning-foreground); }
.ch-regressed { color: var(--vscode-errorForeground); }
.ch-improved { color: var(--vscode-testing-iconPassed, green); }`);
}
