// Rendering the server's kmx.explain/v1 explanation as Markdown. The server
// decides everything (which records, current or historical, what content is
// withheld); this only lays it out, escaping every value it did not write.
import { type Assertion, type ExplainResult, type ExplainedExample, Verdicts } from "./protocol";

/**
 * Escapes text so Markdown shows it literally: no links, HTML, emphasis or
 * tables, and no block marker at the start of a line. The document is read
 * as source too, so nothing else is escaped.
 */
export function mdText(s: string): string {
  const inline = s.replace(/\r?\n/g, " ").replace(/[\\`*_[\]<>|]/g, (c) => `\\${c}`);
  // A backslash escapes punctuation only, so "1." becomes "1\." not "\1.".
  return inline.replace(/^(\s*)([#>+-])/, "$1\\$2").replace(/^(\s*\d+)([.)])/, "$1\\$2");
}

/** An inline code span that holds any text, backticks included. */
export function mdCode(s: string): string {
  const oneLine = s.replace(/\r?\n/g, " ");
  let fence = "`";
  while (oneLine.includes(fence)) {
    fence += "`";
  }
  const pad = oneLine.startsWith("`") || oneLine.endsWith("`") || oneLine === "" ? " " : "";
  return `${fence}${pad}${oneLine}${pad}${fence}`;
}

function verdictWord(v: string): string {
  return v === Verdicts.Unknown ? "inconclusive (unknown)" : v;
}

function assertionLine(a: Assertion, deciding: boolean): string {
  let line = `- ${deciding ? "**deciding** " : ""}assertion ${a.index + 1} ${mdCode(a.type)}: ${mdText(a.outcome)}`;
  if (a.message !== undefined && a.message !== "") {
    line += ` — ${mdText(a.message)}`;
  }
  if (a.expected !== undefined) {
    line += `; expected ${mdCode(a.expected)}`;
  }
  if (a.actual !== undefined) {
    line += `; actual ${mdCode(a.actual)}`;
  }
  if (a.scores !== undefined) {
    line += `; scores ${a.scores.map((s) => (s === null ? "none" : String(s))).join(", ")}`;
  }
  if (a.threshold !== undefined) {
    line += `; threshold ${a.threshold}`;
  }
  return line;
}

function exampleBlock(ex: ExplainedExample): string[] {
  const out = [`### ${mdText(ex.id)}: ${mdText(verdictWord(ex.verdict))}`, ""];
  if (ex.message !== undefined && ex.message !== "") {
    out.push(mdText(ex.message), "");
  }
  const decidingIndex = ex.deciding?.index;
  for (const a of ex.assertions ?? []) {
    out.push(assertionLine(a, a.index === decidingIndex));
  }
  if ((ex.assertions ?? []).length === 0 && ex.deciding !== undefined) {
    out.push(assertionLine(ex.deciding, true));
  }
  if (ex.contentWithheld === true) {
    out.push("", "_Answer excerpts withheld; the server shows them only when asked (show content)._");
  }
  out.push("");
  return out;
}

export function explainMarkdown(res: ExplainResult): string {
  const e = res.explanation;
  const out: string[] = [`# Why the last test failed: ${mdText(e.file)}`, "", `_${mdText(e.label)}: read offline from retained failure records; not a test of the current text._`, ""];
  const records = e.records ?? [];
  if (records.length === 0) {
    out.push("No retained failure for this file: its last tests passed, or it has not been tested yet.", "");
  }
  for (const r of records) {
    out.push(`## ${mdText(r.recordedAt)}: ${mdText(verdictWord(r.verdict))} (${mdText(r.relation)})`, "");
    out.push(`${mdText(r.note)}. Selection: ${mdText(r.selection)}. Model: ${mdCode(`${r.agent.provider}/${r.agent.model}`)}${r.judge !== undefined ? `; judge ${mdCode(`${r.judge.provider}/${r.judge.model}`)}` : ""}.`, "");
    for (const ex of r.examples ?? []) {
      out.push(...exampleBlock(ex));
    }
  }
  for (const c of e.corrupt ?? []) {
    out.push(`- unreadable record ${mdCode(c.name)}: ${mdText(c.reason)}`);
  }
  return `${out.join("\n").trimEnd()}\n`;
}
