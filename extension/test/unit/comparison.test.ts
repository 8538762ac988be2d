// The replay panel's compare view of a comparison run (issue 29): the
// sidecar's grid read back from the journals, rendered and escaped.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { compareHtml } from "../../src/compareHtml";
import { comparisonCellWord, comparisonHtml } from "../../src/diffHtml";
import type { CompareModelsResult, ComparisonDiff } from "../../src/protocol";
import { commandUri, replayHtml } from "../../src/replayHtml";

const evil = `<script>alert(1)</script><img src=x onerror=y>`;
const nonce = "bm9uY2U=";
const replay = (runId: string) => commandUri("kmx.inspectRun", { runId });

function comparison(): ComparisonDiff {
  const model = (m: string) => ({ route: "editor", model: m });
  return {
    schema: "kmx.journal.comparison/v2",
    label: "local preview journal comparison; not a test result",
    liveCalls: 0,
    id: "cmp1",
    columns: 2,
    runs: ["R1", "R2"],
    diffs: [],
    grid: {
      columns: [
        { column: 1, runId: "R1", model: model("kmx-test/kmx-good"), summary: { pass: 2, fail: 0, unknown: 0, other: 0 } },
        { column: 2, runId: "R2", model: model(`kmx-test/${evil}`), summary: { pass: 1, fail: 1, unknown: 0, other: 0 } },
      ],
      rows: [
        {
          id: "agree",
          differs: false,
          cells: [
            { verdict: "pass", side: { turns: [{ model: model("a"), state: "verified", answer: "Release notes: today", verdict: "pass" }], verdicts: ["pass"] } },
            { verdict: "pass", side: { turns: [{ model: model("b"), state: "verified", answer: "Release notes: today", verdict: "pass" }], verdicts: ["pass"] } },
          ],
        },
        {
          id: "disagree",
          differs: true,
          answersDiffer: true,
          cells: [
            { verdict: "pass", side: { turns: [{ model: model("a"), state: "verified", answer: "Release notes: this week", verdict: "pass" }], verdicts: ["pass"] } },
            {
              verdict: "fail",
              side: { turns: [{ model: model("b"), state: "verified", answer: `Notes: ${evil}`, verdict: "fail" }], verdicts: ["fail"] },
              lines: [{ op: "-", text: "Release notes: this week" }, { op: "+", text: `Notes: ${evil}` }],
            },
          ],
        },
      ],
      differ: 1,
      answersDiffer: 1,
    },
  };
}

describe("comparisonHtml: the compare view of a comparison run", () => {
  const html = comparisonHtml(comparison(), nonce, "s", replay);
  it("escapes every value and runs no script", () => {
    assert.ok(!html.includes("<script>") && !html.includes("<img"));
    assert.ok(html.includes("&#60;script&#62;"));
    assert.ok(html.includes("script-src &#39;none&#39;"));
  });
  it("lays out examples × models with the recorded verdicts, highlighting the rows that differ", () => {
    assert.match(html, /<tr data-example="agree"><th scope="row"><a href="#ex-agree"><code>agree<\/code><\/a><\/th><td class="cell v-pass"><span class="verdict v-pass">PASS<\/span><\/td><td class="cell v-pass">/);
    assert.match(html, /<tr data-example="disagree" class="differs">.*≠.*<span class="verdict v-pass">PASS<\/span>.*<span class="verdict v-fail">FAIL<\/span><\/td><\/tr>/);
    assert.ok(html.includes("The columns disagree on 1 example (highlighted); the answers differ on 1 example (line diffs below)."));
    assert.ok(html.includes(`<h2>disagree <span class="status st-changed">verdicts differ</span>`));
    assert.ok(html.includes(`<h2>agree <span class="status st-same">same</span>`));
    assert.ok(html.includes("2 examples × 2 runs") && html.includes("live model calls while comparing: 0"));
    assert.ok(html.includes("kmx-good (editor)") || html.includes("kmx-test/kmx-good (editor)"));
  });
  it("shows each example's answers side by side and the line diff against the first column", () => {
    const sec = html.slice(html.indexOf(`<section class="example" id="ex-disagree"`));
    assert.match(sec, /<table class="sides">.*<td><pre>Release notes: this week<\/pre><\/td><td><pre>Notes: &#60;script&#62;/);
    assert.ok(sec.includes(`<span class="line op-del">- Release notes: this week</span>`));
    assert.ok(sec.includes(`<span class="line op-add">+ Notes: &#60;script&#62;`));
    assert.ok(sec.includes("line diff</span> kmx-test/kmx-good (editor) →"));
  });
  it("links each column to its run's replay", () => {
    const links = [...html.matchAll(/href="([^"#][^"]*)"/g)].map((m) => m[1]);
    assert.deepEqual(links, [replay("R1"), replay("R2")].map((l) => l.replace(/"/g, "&#34;")));
  });
  it("refuses a schema it does not know", () => {
    assert.ok(comparisonHtml({ ...comparison(), schema: "kmx.journal.comparison/v9" }, nonce, "s", replay).includes("cannot read"));
  });
  it("comparisonCellWord", () => {
    assert.equal(comparisonCellWord({ verdict: "flaky", trials: 5, pass: 3 }), "FLAKY 3/5");
    assert.equal(comparisonCellWord({ verdict: "pass", trials: 3, pass: 3 }), "PASS 3/3");
    assert.equal(comparisonCellWord({ verdict: "missing" }), "MISSING");
    assert.equal(comparisonCellWord({}), "—");
  });
});

describe("the links into the compare view", () => {
  it("the Compare Models grid links to the compare view of its first run", () => {
    const res: CompareModelsResult = {
      protocolVersion: "kmx.lsp/v1",
      uri: "u",
      documentVersion: 1,
      comparison: {
        schema: "kmx.test.compare/v1",
        label: "local preview",
        agent: { id: "notes", path: "/w/notes.agent.md" },
        columns: [
          { model: { route: "editor", model: "a" }, side: "current", runId: "R1", verdict: "pass", durationMs: 1, summary: { pass: 1, fail: 0, unknown: 0, refused: 0, flaky: 0 } },
          { model: { route: "editor", model: "b" }, side: "current", runId: "R2", verdict: "pass", durationMs: 1, summary: { pass: 1, fail: 0, unknown: 0, refused: 0, flaky: 0 } },
        ],
        rows: [],
        summary: { pass: 2, fail: 0, unknown: 0, refused: 0, flaky: 0 },
        verdict: "pass",
      },
    };
    const answers = (runId: string) => commandUri("kmx.compareRuns", { runId, comparison: true });
    const h = compareHtml(res, nonce, "s", replay, answers);
    assert.ok(h.includes(`<a id="answers" href="${answers("R1").replace(/"/g, "&#34;")}">`));
    assert.ok(!compareHtml(res, nonce, "s", replay).includes(`id="answers"`));
  });
  it("the replay of a comparison's run links to its compare view", () => {
    const base = {
      schema: "kmx.journal.inspect/v2",
      label: "l",
      run: { runId: "R2", created: "", status: "finished", command: "test", agentId: "notes", agentRevision: "", kmxVersion: "" },
      liveCalls: 0,
      summary: { turns: 0, verified: 0, incomplete: 0, failed: 0, cancelled: 0, judgeSamples: 0 },
      reasoningShown: false,
      contentShown: false,
      turns: [],
    };
    const href = commandUri("kmx.compareRuns", { runId: "R2", comparison: true });
    const h = replayHtml({ ...base, comparison: { id: "cmp1", column: 2, columns: 2 } }, nonce, "s", undefined, undefined, href);
    assert.ok(h.includes(`<a id="comparison" href="${href.replace(/"/g, "&#34;")}">Open the compare view of this comparison (2 runs`));
    assert.ok(!replayHtml(base, nonce, "s", undefined, undefined, href).includes(`id="comparison"`));
  });
});
