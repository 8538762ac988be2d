// Turning the server's report into Test Explorer outcomes. Pure data in and
// out, so the rules that matter are unit-tested without VS Code:
// unknown is never passed, refusals carry their text, failures point at the
// deciding assertion with expected and actual.
import { type AssertionResult, type ExampleResult, type FileEvidence, type Range, type Report, type TrialCounts, type TurnResult, type Usage, Verdicts } from "./protocol";

export interface OutcomeMessage {
  text: string;
  expected?: string;
  actual?: string;
  /** Where the message belongs in the agent file; undefined: nowhere known. */
  range?: Range;
}

/** skipped: a turn that was not run because an earlier turn did not pass. */
export type OutcomeKind = "passed" | "failed" | "errored" | "skipped";

export interface Outcome {
  id: string;
  kind: OutcomeKind;
  durationMs?: number;
  messages: OutcomeMessage[];
}

/** Outcomes for the requested example ids, in request order. */
export function outcomesFor(report: Report | undefined, requested: readonly string[], evidence: readonly FileEvidence[] = []): Outcome[] {
  if (report === undefined) {
    return requested.map((id) => ({
      id,
      kind: "errored",
      messages: [{ text: "inconclusive: kmx returned no report for this run (local preview)" }],
    }));
  }
  const byId = new Map<string, ExampleResult>();
  for (const ex of report.examples ?? []) {
    if (ex.adHoc !== true) {
      byId.set(ex.id, ex);
    }
  }
  return requested.map((id) => {
    const ex = byId.get(id);
    if (ex !== undefined) {
      return outcomeOf(
        ex,
        evidence.filter((e) => e.example === id),
      );
    }
    // A refusal of the whole invocation (invalid file, bad route...) names
    // no example; every requested one shows the refusal text.
    if (report.refusal !== undefined) {
      return { id, kind: "errored", messages: [{ text: refusalText(report.refusal.message, report.refusal.next) }] };
    }
    return { id, kind: "errored", messages: [{ text: `inconclusive: kmx reported nothing for example "${id}"` }] };
  });
}

export function refusalText(message: string, next: string | undefined): string {
  const m = `refused: ${message}`;
  return next !== undefined && next !== "" ? `${m}\n${next}` : m;
}

/**
 * The outcome of one example. evidence is the reply's fileEvidence of this
 * example: a failed file assertion with evidence is shown as an
 * expected/actual diff (the deciding one on its assertion, any other
 * after it).
 */
export function outcomeOf(ex: ExampleResult, evidence: readonly FileEvidence[] = []): Outcome {
  const base = { id: ex.id, durationMs: ex.durationMs };
  switch (ex.verdict) {
    case Verdicts.Pass:
      // The server only says pass for a journaled, replay-verified turn;
      // showing anything else as passed would break kmx's first promise.
      if (!ex.journaled || !ex.verified) {
        return {
          ...base,
          kind: "errored",
          messages: [{ text: "inconclusive: reported as pass without a replay-verified journaled turn", range: ex.range }],
        };
      }
      return { ...base, kind: "passed", messages: [] };
    case Verdicts.Fail:
      return { ...base, kind: "failed", messages: decidingMessages(ex, "failed", evidence) };
    case Verdicts.Unknown:
      return { ...base, kind: "errored", messages: decidingMessages(ex, "inconclusive") };
    case Verdicts.Refused:
      return { ...base, kind: "errored", messages: [{ text: `refused: ${ex.message ?? "kmx refused this example"}`, range: ex.range }] };
    default:
      return {
        ...base,
        kind: "errored",
        messages: [{ text: `inconclusive: kmx answered the verdict "${ex.verdict}", which this extension does not know`, range: ex.range }],
      };
  }
}

/**
 * Outcomes of a multi-turn example's turns, in order, one per turn the
 * report lists (id "turn:N"): each turn's own verdict. A turn that was not
 * run is skipped (never passed); a pass needs its own journaled,
 * replay-verified turn, as an example's does. Empty for a one-turn example.
 */
export function turnOutcomes(ex: ExampleResult): Outcome[] {
  return (ex.turns ?? []).map((t) => turnOutcome(ex.id, t));
}

function turnOutcome(exampleId: string, t: TurnResult): Outcome {
  const name = `${exampleId} turn ${t.turn}`;
  const base = { id: `turn:${t.turn}`, durationMs: t.durationMs };
  // Over trials the server's message says what each trial did
  // ("…; trial 1: pass; trial 2: fail: …"): a line per trial in the peek.
  const message = t.trials !== undefined ? t.message?.split("; trial ").join("\ntrial ") : t.message;
  const decided = { id: name, message, assertions: t.assertions, deciding: t.deciding, decidingRange: t.decidingRange, range: t.range };
  switch (t.verdict) {
    case Verdicts.Pass:
      if (!t.journaled || !t.verified) {
        return { ...base, kind: "errored", messages: [{ text: "inconclusive: reported as pass without a replay-verified journaled turn", range: t.range }] };
      }
      return { ...base, kind: "passed", messages: [] };
    case Verdicts.Fail:
      return { ...base, kind: "failed", messages: decidingMessages(decided, "failed") };
    case Verdicts.Unknown:
      return { ...base, kind: "errored", messages: decidingMessages(decided, "inconclusive") };
    case Verdicts.NotRun:
      return { ...base, kind: "skipped", messages: [{ text: `${name}: ${message ?? "not run"}`, range: t.range }] };
    case Verdicts.Refused:
      return { ...base, kind: "errored", messages: [{ text: `refused: ${t.message ?? "kmx refused this turn"}`, range: t.range }] };
    default:
      return { ...base, kind: "errored", messages: [{ text: `inconclusive: kmx answered the verdict "${t.verdict}", which this extension does not know`, range: t.range }] };
  }
}

/**
 * Token usage as the route reported it, "98 tokens (prompt 75, completion
 * 23)"; undefined when nothing was reported, so a route without usage
 * shows nothing rather than "0". Turns that reported none beside ones that
 * did make the sum a lower bound, and it says so.
 */
export function usageText(u: Usage | undefined): string | undefined {
  if (u === undefined || (u.totalTokens === 0 && u.promptTokens === 0 && u.completionTokens === 0)) {
    return undefined;
  }
  let text = `${u.totalTokens} tokens (prompt ${u.promptTokens}, completion ${u.completionTokens})`;
  const missing = u.unreported ?? 0;
  if (missing > 0) {
    text += `; a lower bound: ${missing} turn${missing === 1 ? "" : "s"} reported no usage`;
  }
  return text;
}

/** "98 tokens · judge 40 tokens", the short form for a test item's description; undefined without usage. */
export function usageMark(agent: Usage | undefined, judge?: Usage): string | undefined {
  const parts: string[] = [];
  if (usageText(agent) !== undefined && agent !== undefined) {
    parts.push(`${agent.totalTokens} tokens`);
  }
  if (usageText(judge) !== undefined && judge !== undefined) {
    parts.push(`judge ${judge.totalTokens} tokens`);
  }
  return parts.length > 0 ? parts.join(" · ") : undefined;
}

/**
 * The Test Explorer output lines of an example's usage: the agent's and
 * the judge's apart, and each turn's; none when no usage was reported.
 */
export function usageLines(ex: ExampleResult): { turn?: number; text: string }[] {
  const out: { turn?: number; text: string }[] = [];
  const agent = usageText(ex.usage);
  const judge = usageText(ex.judgeUsage);
  if (agent !== undefined || judge !== undefined) {
    const parts = [];
    if (agent !== undefined) {
      parts.push(`agent ${agent}`);
    }
    if (judge !== undefined) {
      parts.push(`judge ${judge}`);
    }
    out.push({ text: `${ex.id}: tokens: ${parts.join(" · ")}` });
  }
  for (const t of ex.turns ?? []) {
    const u = usageText(t.usage);
    if (u !== undefined) {
      out.push({ turn: t.turn, text: `${ex.id} turn ${t.turn}: tokens: agent ${u}` });
    }
  }
  return out;
}

/** What deciding messages read: an example's fields, or a turn's under its name. */
interface Decided {
  id: string;
  message?: string;
  assertions?: AssertionResult[];
  deciding?: number;
  decidingRange?: Range;
  range?: Range;
}

function decidingAssertion(ex: Decided): AssertionResult | undefined {
  if (ex.deciding === undefined) {
    return undefined;
  }
  return (ex.assertions ?? []).find((a) => a.index === ex.deciding);
}

// The first message sits on the deciding assertion with expected/actual (a
// diff in the peek); the second on the example's `- id:` line, so both
// places show why.
function decidingMessages(ex: Decided, word: "failed" | "inconclusive", evidence: readonly FileEvidence[] = []): OutcomeMessage[] {
  const a = decidingAssertion(ex);
  const why = ex.message ?? a?.message ?? "";
  const head = word === "inconclusive" ? "inconclusive (unknown, not a pass)" : "failed";
  const out: OutcomeMessage[] = [];
  if (a !== undefined) {
    const m: OutcomeMessage = {
      text: `${head}: assertion ${a.index + 1} (${a.type}) ${a.outcome}: ${a.message}${scoresText(a)}`,
      range: ex.decidingRange ?? ex.range,
    };
    if (word === "inconclusive") {
      // No diff for an unknown outcome: "scores none, none" beside
      // "score >= 70" reads as a comparison that failed. Say it in words.
      if (a.expected !== undefined) {
        m.text += `\nneeded: ${a.expected}`;
      }
      if (a.actual !== undefined) {
        m.text += `\ngot: ${a.actual}`;
      }
    } else {
      if (a.expected !== undefined) {
        m.expected = a.expected;
      }
      if (a.actual !== undefined) {
        m.actual = a.actual;
      }
    }
    // A file assertion's sides are in the reply's evidence, not in the
    // report (which carries paths only): the file's content against what
    // was expected, as a diff.
    const ev = word === "failed" ? evidence.find((e) => e.assertion === a.index) : undefined;
    if (ev !== undefined) {
      m.expected = ev.expected;
      m.actual = ev.actual;
    }
    out.push(m);
  }
  if (word === "failed") {
    for (const other of ex.assertions ?? []) {
      const ev = evidence.find((e) => e.assertion === other.index);
      if (other.index === a?.index || other.outcome !== "fail" || ev === undefined) {
        continue;
      }
      out.push({ text: `failed too: assertion ${other.index + 1} (${other.type}) ${other.outcome}: ${other.message}`, expected: ev.expected, actual: ev.actual, range: ex.range });
    }
  }
  out.push({ text: `${ex.id}: ${head}${why !== "" ? `: ${why}` : ""} (local preview)`, range: ex.range });
  return out;
}

function scoresText(a: AssertionResult): string {
  if (a.scores === undefined) {
    return "";
  }
  const s = a.scores.map((v) => (v === null ? "none" : String(v))).join(", ");
  return a.threshold !== undefined ? ` (scores ${s}; threshold ${a.threshold})` : ` (scores ${s})`;
}

/**
 * The Test Explorer output lines about tools: the frozen kmx.yaml states,
 * then each example's calls and sources. Never arguments or results.
 */
export function toolLines(report: Report): string[] {
  const lines: string[] = [];
  const settings = report.toolSettings ?? [];
  if (settings.length > 0) {
    lines.push(`tools: ${settings.map((s) => `${s.name} ${s.state}`).join(", ")}`);
  }
  for (const ex of report.examples ?? []) {
    if ((ex.toolCalls ?? 0) > 0) {
      const sources = (ex.toolSources ?? []).map((s) => `${s.name} (${s.source})`).join(", ");
      lines.push(`${ex.id}: ${ex.toolCalls} tool call${ex.toolCalls === 1 ? "" : "s"}: ${sources}`);
    }
  }
  // Named once: which tools answered "not available in this test", and
  // how to give them real results.
  const stubbed = report.stubbed;
  if (stubbed !== undefined) {
    lines.push(`stubbed: ${(stubbed.tools ?? []).join(", ")} ${stubbed.message}`);
    lines.push(`next: ${stubbed.next}`);
  }
  return lines;
}

/** One line for notifications and the status of a run. */
export function summaryLine(report: Report): string {
  if (report.refusal !== undefined) {
    return `kmx refused: ${report.refusal.message}`;
  }
  const s = report.summary;
  const parts = [`${s.pass} pass`, `${s.fail} fail`];
  if (s.unknown > 0) {
    parts.push(`${s.unknown} inconclusive`);
  }
  if (s.refused > 0) {
    parts.push(`${s.refused} refused`);
  }
  return `${report.verdict === Verdicts.Unknown ? "inconclusive" : report.verdict}: ${parts.join(", ")} (${report.label})`;
}

/** The verdict of a single Run example or Run With Input, with its answer. */
export function runVerdictText(report: Report): string {
  if (report.refusal !== undefined) {
    return refusalText(report.refusal.message, report.refusal.next).replace("\n", " ");
  }
  const ex = (report.examples ?? [])[0];
  if (ex === undefined) {
    return `kmx: no result (${report.label})`;
  }
  const verdict = ex.verdict === Verdicts.Unknown ? "inconclusive (unknown)" : ex.verdict;
  const who = ex.adHoc === true ? "input" : `example "${ex.id}"`;
  let text = `kmx ${who}: ${verdict}`;
  if (ex.verdict !== Verdicts.Pass && ex.verdict !== Verdicts.Answered && ex.message !== undefined && ex.message !== "") {
    text += ` — ${ex.message}`;
  }
  if (ex.answer !== undefined) {
    const oneLine = ex.answer.replace(/\s+/g, " ").trim();
    text += ` — answer: ${oneLine.length > 160 ? `${oneLine.slice(0, 157)}...` : oneLine}`;
  }
  return `${text} (${report.label})`;
}

/** "flaky 3/5" for an example (or a multi-turn example's turn) whose trials had mixed outcomes, else undefined. */
export function flakyText(ex: { trials?: TrialCounts } | undefined): string | undefined {
  const t = ex?.trials;
  return t !== undefined && t.flaky ? `flaky ${t.pass}/${t.n}` : undefined;
}

/**
 * "re-grade of run R: 0 agent model calls · …" for a re-grade's report (the
 * counts the server reported, as kmx test --from prints them), else
 * undefined.
 */
export function regradeLine(report: Report): string | undefined {
  const g = report.regrade;
  if (g === undefined) {
    return undefined;
  }
  const n = (k: number, one: string, many: string) => `${k} ${k === 1 ? one : many}`;
  let line = `re-grade of run ${g.sourceRun}: ${n(g.agentCalls, "agent model call", "agent model calls")} · ${n(g.replayed, "answer", "answers")} replayed from it · ${n(g.reusedJudgeSamples, "judge sample", "judge samples")} reused · ${n(g.judgeCalls, "fresh judge sample", "fresh judge samples")} sent`;
  if (g.notRegraded > 0) {
    line += ` · ${n(g.notRegraded, "example", "examples")} not re-graded`;
  }
  return line;
}
