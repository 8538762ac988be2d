import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { diffHtml } from "../../src/diffHtml";
import type { Report, RunDiff } from "../../src/protocol";
import { commandUri, replayHtml } from "../../src/replayHtml";
import { regradeLine } from "../../src/results";

const evil = `<script>alert(1)</script>`;

function runDiff(): RunDiff {
  const run = { created: "2026-12-01T21:49:29Z", status: "finished", command: "test", agentId: "triage", agentRevision: "ab", kmxVersion: "0.1.0" };
  return {
    schema: "kmx.journal.diff/v2",
    label: "local preview journal comparison; not a test result",
    liveCalls: 0,
    a: { ...run, runId: "RA", verdicts: true, trials: 2 },
    b: { ...run, runId: "RB", verdicts: true, sourceRun: "RA" },
    summary: { same: 1, changed: 1, onlyA: 0, onlyB: 0 },
    examples: [
      {
        id: "wobbly",
        status: "changed",
        a: {
          turns: [
            { model: { route: "compatible", model: "m" }, state: "verified", answer: "yes", verdict: "pass", durationMs: 12.34 },
            { model: { route: "compatible", model: "m" }, state: "verified", answer: "no", verdict: "fail", durationMs: 10 },
          ],
        },
        b: { turns: [{ model: { route: "compatible", model: "m" }, state: "verified", answer: `yes\n${evil}`, verdict: "fail", durationMs: 1 }] },
        lines: [
          { op: "=", text: "yes" },
          { op: "+", text: evil },
        ],
      },
      {
        id: "steady",
        status: "same",
        a: { turns: [{ model: { route: "compatible", model: "m" }, state: "verified", answer: "steady", verdict: "pass" }] },
        b: { turns: [{ model: { route: "compatible", model: "m" }, state: "verified", answer: "steady", verdict: "pass" }] },
      },
    ],
  };
}

describe("diffHtml", () => {
  const nonce = "bm9uY2U=";
  const back = commandUri("kmx.inspectRun", { runId: "RB" });
  const html = diffHtml(runDiff(), nonce, "vscode-resource:", back);
  it("escapes every value and runs no script", () => {
    assert.ok(!html.includes("<script>"));
    assert.ok(html.includes("&#60;script&#62;"));
    assert.ok(html.includes(`<style nonce="${nonce}">`));
  });
  it("says it is a comparison, not a test result, with the runs and what B is", () => {
    assert.ok(html.includes(`<p class="banner" id="label">local preview journal comparison; not a test result</p>`));
    assert.match(html, /run A<\/span> <code>RA<\/code> · test of <code>triage<\/code> · finished · [^·]+ · 2 trials per example · verdicts recorded/);
    assert.match(html, /run B<\/span> <code>RB<\/code>.*re-grade of run A/);
    assert.ok(html.includes("1 same · 1 changed · 0 only in A · 0 only in B · live model calls while comparing: 0"));
  });
  it("shows each trial's verdict, model, replay state and duration, and the answers' line diff", () => {
    assert.ok(html.includes(`<td>A#1</td><td><span class="verdict v-pass">pass</span></td><td><code>compatible / m</code></td><td><span class="state s-verified">verified</span></td><td>12.3 ms</td>`));
    assert.ok(html.includes(`<td>A#2</td><td><span class="verdict v-fail">fail</span>`));
    assert.ok(html.includes(`<td>B</td><td><span class="verdict v-fail">fail</span>`));
    assert.ok(html.includes(`<span class="line op-same">  yes</span>\n<span class="line op-add">+ &#60;script&#62;`));
    assert.match(html, /data-example="steady" data-status="same".*answers<\/span> <span class="muted">identical/s);
  });
  it("links only back to the replay, by a command URI", () => {
    const links = [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]);
    assert.deepEqual(links, [`command:kmx.inspectRun?${encodeURIComponent(JSON.stringify([{ runId: "RB" }]))}`]);
  });
  it("says when a run recorded no verdicts, and refuses a schema it does not know", () => {
    const d = runDiff();
    d.a.verdicts = false;
    assert.ok(diffHtml(d, nonce, "s").includes("no recorded verdicts: answers only"));
    assert.ok(diffHtml({ ...runDiff(), schema: "x/v9" }, nonce, "s").includes("cannot read (schema x/v9"));
  });
});

describe("the replay's compare link", () => {
  it("is a command URI naming the run on screen", () => {
    const inspection = {
      schema: "kmx.journal.inspect/v2",
      label: "local preview journal replay; not a test result",
      run: { runId: "R1", created: "2026-11-30T17:20:30Z", status: "finished", command: "test", agentId: "triage", agentRevision: "ab", kmxVersion: "0.1.0" },
      liveCalls: 0,
      summary: { turns: 0, verified: 0, incomplete: 0, failed: 0, cancelled: 0, judgeSamples: 0 },
      reasoningShown: false,
      contentShown: false,
      turns: [],
    };
    const h = replayHtml(inspection, "n", "s", undefined, commandUri("kmx.compareRuns", { runId: "R1" }));
    assert.ok(h.includes(`<a id="compare" href="command:kmx.compareRuns?%5B%7B%22runId%22%3A%22R1%22%7D%5D">Compare with previous run of this file</a>`));
    assert.ok(!replayHtml(inspection, "n", "s").includes(`id="compare"`));
  });
});

describe("regradeLine", () => {
  it("says what kmx test --from prints, or nothing for a plain test", () => {
    const rep = { regrade: { sourceRun: "R", agentCalls: 0, judgeCalls: 0, reusedJudgeSamples: 2, replayed: 2, notRegraded: 0 } } as unknown as Report;
    assert.equal(regradeLine(rep), "re-grade of run R: 0 agent model calls · 2 answers replayed from it · 2 judge samples reused · 0 fresh judge samples sent");
    const refused = { regrade: { sourceRun: "R", agentCalls: 0, judgeCalls: 1, reusedJudgeSamples: 0, replayed: 1, notRegraded: 2 } } as unknown as Report;
    assert.equal(regradeLine(refused), "re-grade of run R: 0 agent model calls · 1 answer replayed from it · 0 judge samples reused · 1 fresh judge sample sent · 2 examples not re-graded");
    assert.equal(regradeLine({} as Report), undefined);
  });
});
