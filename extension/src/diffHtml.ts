// The comparison page of the replay panel, built from the server's
// kmx.journal.diff/v2 (kmx/diffRuns): the sidecar picked the two runs,
// replayed both with zero model calls and diffed them; this only renders.
// Every value is escaped; no script; the one link is a command URI the
// panel allows (back to the replay).
import type { DiffRun, DiffSide, DiffTurn, ExampleDiff, RunDiff } from "./protocol";
import { escapeHtml, journalPageHtml } from "./replayHtml";

export const DiffSchema = "kmx.journal.diff/v2";
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

function exampleHtml(ex: ExampleDiff): string {
  let h = `<section class="example" data-example="${escapeHtml(ex.id)}" data-status="${escapeHtml(ex.status)}"><h2>${escapeHtml(ex.id)} <span class="status st-${escapeHtml(ex.status)}">${escapeHtml(ex.status)}</span></h2>`;
  h += `<table><thead><tr><th>run</th><th>verdict</th><th>model</th><th>replay</th><th>duration</th></tr></thead><tbody>${turnRows("A", ex.a)}${turnRows("B", ex.b)}</tbody></table>`;
  const lines = ex.lines ?? [];
  if (lines.length > 0) {
    const body = lines.map((l) => `<span class="line op-${l.op === "-" ? "del" : l.op === "+" ? "add" : "same"}">${escapeHtml(`${l.op === "=" ? " " : l.op} ${l.text}`)}</span>`).join("\n");
    h += `<div class="field"><span class="label">answers (A → B)</span></div><pre class="diff">${body}</pre>`;
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
