import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { explainMarkdown, mdCode, mdText } from "../../src/explainMarkdown";
import type { ExplainResult, Inspection, Report } from "../../src/protocol";
import { contentSecurityPolicy, escapeHtml, replayHtml } from "../../src/replayHtml";

const evil = `<script>alert(1)</script><img src="https://example.invalid/x.png" onerror='y'>`;

function inspection(answer: string): Inspection {
  return {
    schema: "kmx.journal.inspect/v2",
    label: "local preview journal replay; not a test result",
    run: { runId: "R1", created: "2026-11-30T17:20:30Z", status: "finished", command: "test", agentId: "triage", agentRevision: "ab", kmxVersion: "0.1.0" },
    liveCalls: 0,
    summary: { turns: 1, verified: 1, incomplete: 0, failed: 0, cancelled: 0, judgeSamples: 1 },
    reasoningShown: true,
    contentShown: true,
    turns: [
      {
        example: "crash",
        purpose: "agent",
        sessionId: "s1",
        turn: 1,
        model: { route: "fake", model: "fake" },
        input: evil,
        answer,
        state: "verified",
        judgeSamples: [{ sessionId: "s2", turn: 1, model: { route: "fake", model: "fake" }, state: "verified", reply: "scored", score: 100, reasoning: "because <b>" }],
      },
    ],
  };
}

describe("replayHtml", () => {
  const nonce = "bm9uY2U=";
  const html = replayHtml(inspection(evil), nonce, "vscode-resource:", undefined);
  it("shows the instructions each agent turn sent, collapsed and escaped (issue 31 item 20)", () => {
    const i = inspection("bug");
    const turn = (i.turns ?? [])[0];
    assert.ok(turn !== undefined);
    i.turns = [{ ...turn, instructions: `You label tickets.\n${evil}`, instructionsBytes: 120, instructionsLines: 2 }];
    const page = replayHtml(i, nonce, "vscode-resource:", undefined);
    assert.ok(page.includes(`<details class="instructions"><summary>instructions sent (120 bytes, 2 lines)</summary>`), "no collapsed instructions");
    assert.ok(page.includes("You label tickets."));
    assert.ok(!page.includes("<script>"), "raw script tag in the instructions");
    assert.ok(!html.includes(`class="instructions"`), "instructions shown for a turn that carries none");
  });
  it("escapes every value it shows", () => {
    assert.ok(!html.includes("<script>"), "raw script tag in the page");
    assert.ok(!html.includes("<img"), "raw img tag in the page");
    assert.ok(html.includes("&#60;script&#62;alert(1)&#60;/script&#62;"));
  });
  it("has a CSP with the nonce, no scripts and no remote sources", () => {
    const csp = contentSecurityPolicy(nonce, "vscode-resource:");
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'none'/);
    assert.ok(csp.includes(`'nonce-${nonce}'`));
    assert.ok(!/https?:/.test(csp), "remote source in CSP");
    assert.ok(html.includes(`<style nonce="${nonce}">`));
    assert.ok(!/<script/i.test(html));
    // The hostile input's URL may appear as text, never as an attribute.
    assert.ok(!/(src|href)\s*=\s*["']?[a-z]+:/i.test(html), "a page attribute loads something");
  });
  it("says it is a replay, not a test result, and folds judge reasoning", () => {
    assert.ok(html.includes("local preview journal replay; not a test result"));
    assert.match(html, /<details><summary>reasoning<\/summary><pre>because &#60;b&#62;<\/pre><\/details>/);
  });
  it("uses theme colours", () => {
    assert.ok(html.includes("var(--vscode-foreground)"));
    assert.ok(!/#[0-9a-f]{6}\b/i.test(html.replace(/&#[0-9]+;/g, "")), "a hard-coded colour");
  });
  it("shows verdicts and assertion results only from the same run's report", () => {
    const rep = {
      runId: "R1",
      examples: [{ id: "crash", verdict: "fail", journaled: true, verified: true, durationMs: 1, assertions: [{ index: 0, type: "contains", outcome: "fail", expected: "x", message: "m" }] }],
    } as unknown as Report;
    assert.ok(replayHtml(inspection("bug"), nonce, "s", rep).includes("verdict (from the run&#39;s report)"));
    assert.ok(!replayHtml(inspection("bug"), nonce, "s", { ...rep, runId: "R2" }).includes("verdict (from"));
  });
  it("says when a replay made live calls", () => {
    assert.ok(replayHtml({ ...inspection("x"), liveCalls: 2 }, nonce, "s").includes("attempted 2 live model call(s)"));
  });
  it("shows a turn that did not verify without an answer", () => {
    const base = inspection("x");
    const t = { ...(base.turns ?? [])[0]!, state: "incomplete", reason: "no completion was journaled" };
    delete t.answer;
    const h = replayHtml({ ...base, turns: [t] }, nonce, "s");
    assert.ok(h.includes("no replay-verified answer"));
    assert.ok(h.includes("no completion was journaled"));
  });
  it("shows a tool turn's offered tools and each call with its source, escaped", () => {
    const base = inspection("x");
    const t = {
      ...(base.turns ?? [])[0]!,
      harness: "kmx-local-tools-v1",
      tools: [{ name: "github_list_merged_prs", state: "Enabled", source: "recorded" }],
      toolCalls: [
        { index: 1, id: "call_1", name: "github_list_merged_prs", arguments: "{}", source: "recorded", result: "<b>12</b>" },
        { index: 2, id: "call_2", name: "github_list_merged_prs", arguments: "{}" },
      ],
    };
    const h = replayHtml({ ...base, turns: [t] }, nonce, "s");
    assert.ok(h.includes("tools offered"));
    assert.ok(h.includes("<code>github_list_merged_prs</code> Enabled (recorded)"));
    assert.ok(h.includes("source <code>recorded</code>"));
    assert.ok(h.includes("&#60;b&#62;12&#60;/b&#62;") && !h.includes("<b>12</b>"));
    assert.ok(h.includes("no result journaled"));
  });
  it("names stubbed calls once, by the file's name for the tool, with the next step", () => {
    const base = inspection("x");
    const t = {
      ...(base.turns ?? [])[0]!,
      harness: "kmx-local-tools-v1",
      tools: [{ name: "edit/editFiles", function: "edit_editFiles", reference: "edit", state: "Enabled", source: "unavailable" }],
      toolCalls: [{ index: 1, id: "call_1", name: "edit_editFiles", tool: "edit/editFiles", arguments: "{}", source: "unavailable", result: "This tool is not available in this test." }],
    };
    const h = replayHtml({ ...base, turns: [t, { ...t, example: "b" }] }, nonce, "s");
    assert.ok(h.includes("<code>edit/editFiles</code> <span class=\"muted\">as edit_editFiles</span> Enabled (unavailable)"));
    assert.ok(h.includes("<code>edit/editFiles</code> <span class=\"muted\">as <code>edit_editFiles</code></span> call 1"));
    assert.equal(h.split("Stubbed:").length, 2, "the stubbed tools are named once");
    assert.ok(h.includes("stub: not available in this test") && h.includes("with a recording"));
    assert.ok(!replayHtml(base, nonce, "s").includes("Stubbed:"));
  });
  it("refuses a schema it does not know", () => {
    const h = replayHtml({ ...inspection("x"), schema: "other/v9" }, nonce, "s");
    assert.ok(h.includes("cannot read (schema other/v9"));
  });
  it("escapeHtml covers quotes", () => {
    assert.equal(escapeHtml(`"'&<>`), "&#34;&#39;&#38;&#60;&#62;");
  });
});

describe("explainMarkdown", () => {
  const res: ExplainResult = {
    protocolVersion: "kmx.lsp/v1",
    uri: "file:///w/triage.agent.md",
    label: "local preview",
    explanation: {
      schema: "kmx.explain/v1",
      label: "local preview",
      file: "triage.agent.md",
      subject: "/w/triage.agent.md",
      contentShown: false,
      records: [
        {
          recordedAt: "2026-11-30T17:20:30Z",
          revision: "ee7b",
          relation: "current",
          note: "recorded for the current text",
          selection: "full",
          agent: { provider: "fake", model: "fake" },
          verdict: "fail",
          examples: [
            {
              id: "billing",
              verdict: "fail",
              message: "1 of 1 assertions failed",
              deciding: { index: 0, type: "contains", outcome: "fail", expected: "bill`ing", message: "the answer does not contain the expected text" },
              assertions: [{ index: 0, type: "contains", outcome: "fail", expected: "bill`ing", message: "the answer does not contain the expected text" }],
              contentWithheld: true,
            },
          ],
        },
      ],
    },
  };
  const md = explainMarkdown(res);
  it("names the failing example and its deciding assertion with what was expected", () => {
    assert.ok(md.includes("### billing: fail"));
    assert.ok(md.includes("**deciding** assertion 1 `contains`: fail"));
    assert.ok(md.includes("expected ``bill`ing``"));
  });
  it("says it is a local preview read offline", () => {
    assert.ok(md.includes("local preview: read offline"));
  });
  it("says so when nothing is retained", () => {
    const empty = explainMarkdown({ ...res, explanation: { ...res.explanation, records: [] } });
    assert.ok(empty.includes("No retained failure"));
  });
  const esc: { in: string; want: string }[] = [
    { in: "[x](http://a)", want: "\\[x\\](http://a)" },
    { in: "1. not a list", want: "1\\. not a list" },
    { in: "# not a heading", want: "\\# not a heading" },
    { in: "a-b (c). d", want: "a-b (c). d" },
    { in: "<b>*hi*</b>", want: "\\<b\\>\\*hi\\*\\</b\\>" },
    { in: "two\nlines", want: "two lines" },
  ];
  for (const c of esc) {
    it(`mdText ${JSON.stringify(c.in)}`, () => assert.equal(mdText(c.in), c.want));
  }
  it("mdCode holds backticks", () => {
    assert.equal(mdCode("a`b"), "``a`b``");
    assert.equal(mdCode("`x"), "`` `x ``");
  });
});
