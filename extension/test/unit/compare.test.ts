import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cellWord, columnHeader, compareHtml } from "../../src/compareHtml";
import type { CompareColumn, CompareModelsResult } from "../../src/protocol";
import { commandUri } from "../../src/replayHtml";

const evil = `<script>alert(1)</script>`;

function column(model: string, runId: string, verdict: string): CompareColumn {
  return { model: { route: "editor", model }, side: "current", runId, verdict, durationMs: 10, summary: { pass: 1, fail: verdict === "fail" ? 1 : 0, unknown: 0, refused: 0, flaky: 0 } };
}

/** Two models on two examples, disagreeing on the second; a model name with markup. */
function twoModels(): CompareModelsResult {
  return {
    protocolVersion: "kmx.lsp/v1",
    uri: "file:///w/notes.agent.md",
    documentVersion: 3,
    comparison: {
      schema: "kmx.test.compare/v1",
      label: "local preview",
      agent: { id: "notes", path: "/w/notes.agent.md" },
      columns: [column("copilot/gpt-4.1", "R1", "pass"), column(`copilot/${evil}`, "R2", "fail")],
      rows: [
        { id: "first", verdict: "pass", cells: [{ verdict: "pass", durationMs: 12.34 }, { verdict: "pass", durationMs: 3 }] },
        { id: "second", verdict: "fail", differs: true, cells: [{ verdict: "pass", durationMs: 1 }, { verdict: "fail", durationMs: 2, trials: { n: 5, pass: 3, fail: 2, unknown: 0, flaky: true } }] },
      ],
      summary: { pass: 3, fail: 1, unknown: 0, refused: 0, flaky: 1 },
      verdict: "fail",
    },
  };
}

describe("compareHtml", () => {
  const nonce = "bm9uY2U=";
  const replay = (runId: string) => commandUri("kmx.inspectRun", { runId });
  const html = compareHtml(twoModels(), nonce, "vscode-resource:", replay);
  it("escapes every value and runs no script", () => {
    assert.ok(!html.includes("<script>"));
    assert.ok(html.includes("&#60;script&#62;"));
    assert.ok(html.includes(`<style nonce="${nonce}">`));
    assert.ok(html.includes("script-src &#39;none&#39;"));
  });
  it("lays out examples × models with each cell's verdict, and highlights the rows the sidecar marked differs", () => {
    assert.match(html, /<tr data-example="first"><th scope="row"><code>first<\/code><\/th><td class="cell v-pass"><span class="verdict v-pass">PASS<\/span> <span class="muted">12.3 ms<\/span><\/td>/);
    assert.match(html, /<tr data-example="second" class="differs"><th scope="row"><code>second<\/code> <span class="mark"[^>]*>≠<\/span><\/th>/);
    assert.ok(html.includes(`<span class="verdict v-fail">FLAKY 3/5</span>`));
    assert.ok(html.includes("The models disagree on 1 example (highlighted)."));
    assert.ok(html.includes("2 examples × 2 models: 3 pass, 1 fail, 0 unknown"));
  });
  it("links each model to its run's replay, and nothing else", () => {
    const links = [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]);
    assert.deepEqual(links, [replay("R1"), replay("R2")].map((l) => l.replace(/"/g, "&#34;")));
  });
  it("shows a refusal and what to change instead of a grid", () => {
    const r = compareHtml({ protocolVersion: "kmx.lsp/v1", uri: "u", documentVersion: 0, refusal: { message: `the comparison names the model ${evil} twice`, next: "name each model once" } }, nonce, "s", replay);
    assert.ok(r.includes(`kmx refused the comparison: the comparison names the model &#60;script&#62;`));
    assert.ok(r.includes("Next: name each model once"));
    assert.ok(!r.includes(`id="grid"`));
  });
  it("shows the changes against a baseline and marks a regressed row", () => {
    const res = twoModels();
    const g = res.comparison;
    assert.ok(g !== undefined);
    g.columns = [column("fake", "R1", "fail"), { ...column("fake", "R3", "pass"), side: "baseline", baseline: { rev: "HEAD~1", commit: "0123456789abcdef0123" } }];
    g.rows = [{ id: "weekly", verdict: "fail", cells: [{ verdict: "fail", durationMs: 1 }, { verdict: "pass", durationMs: 1 }], changes: [{ model: { route: "fake", model: "fake" }, change: "regressed", from: "pass", to: "fail" }] }];
    g.changes = { regressed: 1, improved: 0, unchanged: 0 };
    const h = compareHtml(res, nonce, "s", replay);
    assert.ok(h.includes("fake (editor) · baseline HEAD~1 (0123456789ab)"));
    assert.match(h, /<tr data-example="weekly" class="regressed">.*<span class="change ch-regressed">regressed<\/span>/);
    assert.ok(h.includes(`<span class="ch-regressed">1 regressed</span>`));
  });
  it("refuses a schema it does not know", () => {
    const res = twoModels();
    if (res.comparison !== undefined) {
      res.comparison.schema = "kmx.test.compare/v9";
    }
    assert.ok(compareHtml(res, nonce, "s", replay).includes("cannot read (schema kmx.test.compare/v9"));
  });
});

describe("cellWord and columnHeader", () => {
  it("name cells and columns as the CLI's table does", () => {
    assert.equal(cellWord({ verdict: "pass", durationMs: 0, trials: { n: 3, pass: 3, fail: 0, unknown: 0, flaky: false } }), "PASS 3/3");
    assert.equal(cellWord({ verdict: "refused", durationMs: 0 }), "REFUSED");
    assert.equal(columnHeader(column("gpt", "R", "pass")), "gpt (editor)");
    assert.equal(columnHeader({ ...column("fake", "R", "pass"), side: "baseline", baseline: { rev: "none" } }), "fake (editor) · baseline none");
  });
});
