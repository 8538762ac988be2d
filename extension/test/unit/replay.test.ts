// The replay panel's workspace diff, multi-turn examples and usage
// (issues 27 and 28): what the sidecar sent, rendered and escaped.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { InspectedTurn, Inspection, Report } from "../../src/protocol";
import { replayHtml, usageText } from "../../src/replayHtml";

const evil = `<script>alert(1)</script><img src=x onerror='y'>`;

function turn(over: Partial<InspectedTurn>): InspectedTurn {
  return { example: "fix", purpose: "agent", sessionId: "s1", turn: 1, model: { route: "fake", model: "fake" }, input: "fix it", answer: "done", state: "verified", ...over };
}

function inspection(turns: InspectedTurn[], over: Partial<Inspection> = {}): Inspection {
  return {
    schema: "kmx.journal.inspect/v2",
    label: "local preview journal replay; not a test result",
    run: { runId: "R1", created: "2026-12-05T05:00:00Z", status: "finished", command: "test", agentId: "fixer", agentRevision: "ab", kmxVersion: "0.1.0" },
    liveCalls: 0,
    summary: { turns: turns.length, verified: turns.length, incomplete: 0, failed: 0, cancelled: 0, judgeSamples: 0 },
    reasoningShown: false,
    contentShown: false,
    turns,
    ...over,
  };
}

const nonce = "bm9uY2U=";

describe("replay panel: the workspace after the turn", () => {
  const ws = turn({
    harness: "kmx-workspace-tools-v1",
    tools: [{ name: "edit/editFiles", state: "enabled", source: "workspace" }],
    toolCalls: [{ index: 0, id: "c1", name: "edit_editFiles", tool: "edit/editFiles", arguments: `{"path":"${evil}"}`, source: "workspace", result: `edited ${evil}` }],
    workspace: {
      fixture: "fixtures/calc",
      hash: "sha256:fx",
      outcome: true,
      changes: [
        { path: `calc/${evil}.go`, kind: "modified", diff: "@@ -1,2 +1,2 @@\n package calc\n-return a - b\n+return a + b\n\\ No newline at end of file\n", size: 30, hash: "sha256:a", beforeSize: 30, beforeHash: "sha256:b" },
        { path: "big.bin", kind: "added", hashOnly: true, note: "over the journal's bound (64 KiB a file, 1024 KiB a turn): kept by hash only, so it cannot be diffed", size: 70000, hash: "sha256:big" },
      ],
    },
    verdict: "pass",
  });
  const html = replayHtml(inspection([ws], { examples: [{ id: "fix", verdict: "pass", turns: [0] }] }), nonce, "s");
  it("shows each call with its arguments and result, escaped", () => {
    assert.ok(html.includes("<code>edit/editFiles</code>"));
    assert.ok(html.includes(`edited &#60;script&#62;`));
    assert.ok(!html.includes("<script>") && !html.includes("<img"), "raw markup from a call, a path or a diff");
  });
  it("shows each changed file as a coloured unified diff", () => {
    assert.match(html, /<span class="line op-hunk">@@ -1,2 \+1,2 @@<\/span>/);
    assert.match(html, /<span class="line op-del">-return a - b<\/span>/);
    assert.match(html, /<span class="line op-add">\+return a \+ b<\/span>/);
    assert.match(html, /<span class="line op-note">\\ No newline at end of file<\/span>/);
    assert.ok(html.includes("files changed</span> 2"));
    assert.ok(html.includes("<code>calc/&#60;script&#62;"));
  });
  it("names the fixture with its hash shortened, the whole one in the title", () => {
    const h = replayHtml(inspection([turn({ workspace: { fixture: "fx", hash: `sha256:${"ab".repeat(32)}`, outcome: true, changes: [] } })]), nonce, "s");
    assert.ok(h.includes(`title="sha256:${"ab".repeat(32)}">fixture sha256:abababababab…</span>`));
  });
  it("names a file over the journal's bound by hash, with the note", () => {
    assert.match(html, /<div class="note hash-only">over the journal&#39;s bound[^<]*kept by hash only/);
    assert.ok(html.includes("after <code>sha256:big</code> (70000 bytes)"));
  });
  it("says why a turn that did not verify shows no files", () => {
    const h = replayHtml(inspection([turn({ state: "incomplete", answer: undefined, workspace: { fixture: "fixtures/calc", outcome: false, changes: [] } })]), nonce, "s");
    assert.ok(h.includes("did not replay verified"));
    assert.ok(!h.includes(`class="line`));
  });
  it("says when nothing changed", () => {
    const h = replayHtml(inspection([turn({ workspace: { fixture: "f", outcome: true, changes: [] } })]), nonce, "s");
    assert.match(h, /files changed<\/span> <span class="muted">none<\/span>/);
  });
});

describe("replay panel: multi-turn examples and usage", () => {
  const t1 = turn({ example: "talks/turn:1", exampleId: "talks", scriptTurn: 1, sessionId: "a", input: "x", answer: "Turn 1: x", verdict: "pass", usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 }, durationMs: 2.5 });
  const t2 = turn({ example: "talks/turn:2", exampleId: "talks", scriptTurn: 2, sessionId: "b", input: evil, answer: "Turn 2", verdict: "fail", verdictMessage: "assertion 1 contains failed", judgeUsage: { promptTokens: 7, completionTokens: 3, totalTokens: 10 } });
  const one = turn({ example: "plain", exampleId: "plain", sessionId: "c", input: "q", answer: "a", verdict: "pass" });
  const ins = inspection([t1, t2, one], {
    examples: [
      { id: "talks", verdict: "fail", message: "turn 2 of 3: failed", multiTurn: true, turns: [0, 1], notRun: [{ turn: 3, verdict: "not run", message: "turn 2 failed" }], usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15, unreported: 1 }, judgeUsage: { promptTokens: 7, completionTokens: 3, totalTokens: 10 } },
      { id: "plain", verdict: "pass", turns: [2] },
    ],
    usage: { agent: { promptTokens: 10, completionTokens: 5, totalTokens: 15, unreported: 2 }, judge: { promptTokens: 7, completionTokens: 3, totalTokens: 10 } },
  });
  const report = { runId: "R1", examples: [{ id: "talks", verdict: "fail", turns: [{ turn: 2, verdict: "fail", journaled: true, verified: true, assertions: [{ index: 0, type: "contains", outcome: "fail", expected: "z", message: "no z" }] }] }] } as unknown as Report;
  const html = replayHtml(ins, nonce, "s", report);
  it("groups a multi-turn example's turns in order, each with its input, answer and verdict", () => {
    const sec = html.slice(html.indexOf(`data-example="talks"`));
    const a = sec.indexOf("<h3>turn 1 of 3");
    const b = sec.indexOf("<h3>turn 2 of 3");
    const c = sec.indexOf("<h3>turn 3 of 3");
    assert.ok(a > 0 && b > a && c > b, "turns 1, 2, 3 in order");
    assert.ok(sec.includes("multi-turn, 3 turns"));
    assert.ok(sec.includes(`<span class="verdict v-fail">fail</span> <span class="muted">turn 2 of 3: failed</span>`));
    assert.ok(sec.includes(`<span class="verdict v-not-run">not run</span>`));
    assert.ok(sec.includes("Turn 1: x") && sec.includes("&#60;script&#62;alert(1)"));
    assert.ok(!html.includes("<script>"));
  });
  it("shows this session's assertion results under the turn they belong to", () => {
    const turn2 = html.slice(html.indexOf("<h3>turn 2 of 3"), html.indexOf("<h3>turn 3 of 3"));
    assert.ok(turn2.includes("assertion 1 contains</code> fail: no z"));
  });
  it("shows usage per turn, per example and per run, the judge's apart, and never 0 for none reported", () => {
    assert.ok(html.includes("tokens</span> <span class=\"usage\">15 (prompt 10, completion 5)</span>"));
    assert.ok(html.includes("judge tokens</span> <span class=\"usage\">10 (prompt 7, completion 3)</span>"));
    assert.ok(html.includes("example tokens</span> <span class=\"usage\">15 (prompt 10, completion 5), 1 turn reported no usage</span>"));
    assert.ok(html.includes("example judge tokens"));
    assert.ok(html.includes("tokens: agent 15 (prompt 10, completion 5), 2 turns reported no usage · judge 10 (prompt 7, completion 3)"));
    // Turn 2 and the one-turn example reported none: "not reported", not 0.
    assert.ok(html.includes(`tokens</span> <span class="muted usage">not reported</span>`));
    assert.ok(!/tokens<\/span> <span class="[a-z ]*">0\b/.test(html), "a zero shown for usage not reported");
    assert.ok(html.includes("duration</span> 2.5 ms"));
  });
  it("shows a one-turn example as its turn, not as a script", () => {
    const plain = html.slice(html.lastIndexOf("<section"));
    assert.ok(plain.includes("<h2>plain"));
    assert.ok(!plain.includes(" of "));
  });
  it("usageText", () => {
    assert.equal(usageText(undefined), "not reported");
    assert.equal(usageText({ promptTokens: 0, completionTokens: 0, totalTokens: 0, unreported: 3 }), "not reported (3 turns)");
    assert.equal(usageText({ promptTokens: 1, completionTokens: 2, totalTokens: 3 }), "3 (prompt 1, completion 2)");
  });
});
